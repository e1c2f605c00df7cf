// Package record defines the records of toolshed's search log (package searchlog):
// searches, calls, and the evidence search learns from. They have a package of their
// own, with no dependency, so that code that only makes or reads records (the toolsearch
// library, a custom store) does not link the log's database drivers.
//
// Argument values are never recorded; query text can be turned off or hashed.
package record

import "time"

// Search is one search a client ran: through the gateway's tool_search, the proxy's
// search tools or the toolsearch library.
type Search struct {
	Time time.Time
	// Source says which front ran it: "gateway", "proxy" or "library".
	Source string
	// Profile is the gateway profile ("" for the default or outside the gateway).
	Profile string
	// Session is an opaque, non-reversible name of the client session (never a raw
	// session id), "" when there is none.
	Session string
	// Subject is who signed in to the session with OAuth (the access token's sub),
	// as the gateway's oauth.subjects setting has it: in clear, or "sha256:" followed
	// by 64 hex digits when hashed; "" when the client did not sign in with OAuth or
	// subjects are off.
	Subject string
	// Query is the query as sent, "" when query logging is off, or "sha256:" followed
	// by 64 hex digits when queries are hashed.
	Query string
	// Mode is the search mode: "bm25", "regex" or "named".
	Mode string
	// Results are the tools returned, best first.
	Results []Hit
	// Latency is how long the search took inside toolshed.
	Latency time.Duration
	// Error is the error code of a search that failed, "" when it succeeded.
	Error string
	// CatalogTokens is what the definitions of every deferred tool would have cost the
	// client, and ResultTokens what the definitions returned cost: the difference is
	// what deferral saved on this turn.
	CatalogTokens, ResultTokens int
}

// Hit is one tool a search returned.
type Hit struct {
	// Tool is the qualified name (server__tool).
	Tool string
	// Rank is the 1-based position in the results.
	Rank int
}

// Call outcomes.
const (
	OutcomeOK          = "ok"          // the tool ran and did not report an error
	OutcomeToolError   = "tool_error"  // the tool ran and reported isError
	OutcomeFailed      = "failed"      // the call failed: unknown tool, bad arguments, protocol error
	OutcomeTimeout     = "timeout"     // the server did not answer in time
	OutcomeCancelled   = "cancelled"   // the client cancelled it, or toolshed stopped
	OutcomeUnavailable = "unavailable" // the server was down or restarting
)

// Call is one tool call that went through toolshed. Its arguments are never recorded.
type Call struct {
	Time    time.Time
	Source  string
	Profile string
	Session string
	Subject string // as in Search
	// Tool is the qualified name (server__tool), Server the server's name.
	Tool, Server string
	// Outcome is one of the Outcome constants.
	Outcome string
	// Duration is how long the call took.
	Duration time.Duration
	// Rank is the best rank at which one of this session's searches returned the tool
	// (1-based), 0 when none did.
	Rank int
	// Query is the query (as recorded in Search.Query) of the session's latest search
	// that returned the tool, "" when none did. With Outcome ok it is the evidence the
	// learned field is built from.
	Query string
}

// Evidence is a query that found a tool its session then called with success: the
// learned field indexes these queries as words of that tool.
type Evidence struct {
	Tool  string
	Query string
	// Count is how many calls the query led to, and Last the newest of them.
	Count int
	Last  time.Time
}
