package gateway

import (
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/metrics"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/searchlog"
	"github.com/toolshed/toolshed/searchlog/recent"
)

// statelessLinkWindow is how long a search of a stateless client (its token's and
// profile's, since it has no session) ties the calls after it to it: one token may hold
// several conversations, so only a call shortly after a search is counted as its.
const statelessLinkWindow = 5 * time.Minute

// recorder feeds the search log (Options.SearchLog): every tool_search, and every call
// of a real tool with the rank and query at which the session's recent searches had
// returned it. A nil log records nothing. Recording only queues (see searchlog.Log), so
// it never slows or fails a search or a call.
//
// It also counts the same events, and tool_describe, in the metrics (Options.Metrics;
// nil counts nothing): one place sees every search, describe and call, however the call
// path changes around it.
type recorder struct {
	log *searchlog.Log
	m   *metrics.Metrics
	tag func(*mcp.ServerSession) string // a session's name in the logs (clients.tagOf)
	// subject is who signed in to a session with OAuth, as the logs name it
	// (Gateway.subjectOf): hashed or "" as the config's oauth.subjects says.
	subject func(*mcp.ServerSession) string

	// links ties calls to the searches that found them, by linkKey (see package recent).
	links recent.Searches
	// linkKey is what a session's searches and calls are tied by: its tag, or for a
	// stateless POST's session (which ends with its request), who sent it.
	linkKey func(tag string) string
}

func newRecorder(log *searchlog.Log, m *metrics.Metrics, tag, subject func(*mcp.ServerSession) string, linkKey func(string) string) *recorder {
	r := &recorder{log: log, m: m, tag: tag, subject: subject, linkKey: linkKey}
	r.links.Window, r.links.Windowed = statelessLinkWindow, isOwnerKey
	return r
}

// search records a tool_search that returned res after latency: each of its queries
// as a search of its own (a select: query, which names its tools rather than searches,
// is left out of the log).
func (r *recorder) search(ss *mcp.ServerSession, profile string, plan *policy.Plan, args json.RawMessage, res bridge.Result, latency time.Duration) {
	r.m.Search(string(res.Code), latency)
	if r.log == nil {
		return
	}
	var in struct {
		Query string `json:"query"`
	}
	if obj, err := bridge.DecodeArguments(args); err == nil {
		_ = json.Unmarshal(obj, &in)
	}
	base := searchlog.Search{
		Time: time.Now().Add(-latency), Source: "gateway", Profile: profile, Session: r.tag(ss), Subject: r.subject(ss),
		Mode: "bm25", Latency: latency, Error: string(res.Code),
		// What listing the tools the bridge hides would have cost.
		CatalogTokens: plan.TotalTokens - plan.VisibleTokens,
	}
	switch found := res.Structured.(type) {
	case bridge.SearchResult:
		r.searchOne(base, plan, in.Query, &found)
	case bridge.MultiSearchResult:
		for _, q := range found.Searches {
			r.searchOne(base, plan, q.Query, &q.SearchResult)
		}
	default: // an error: the query as asked
		r.searchOne(base, plan, in.Query, nil)
	}
}

// searchOne records one query of a tool_search, and what it found (nil for none).
func (r *recorder) searchOne(s searchlog.Search, plan *policy.Plan, query string, found *bridge.SearchResult) {
	if bridge.IsSelect(query) {
		return
	}
	s.Query = query
	if found != nil {
		tools := make([]string, len(found.Matches))
		s.Results = make([]searchlog.Hit, len(found.Matches))
		for i, m := range found.Matches {
			tools[i] = m.Name
			s.Results[i] = searchlog.Hit{Tool: m.Name, Rank: i + 1}
			if t, err := plan.Lookup(m.Name); err == nil {
				s.ResultTokens += plan.Snapshot.ToolTokens(t)
			}
		}
		r.links.Remember(r.linkKey(s.Session), query, tools)
	}
	r.log.Search(s)
}

// describe counts a tool_describe that answered res after d (the search log does not
// record describes).
func (r *recorder) describe(res *mcp.CallToolResult, d time.Duration) {
	r.m.Describe(errorCodeOf(res), d)
}

// errorCodeOf is the error code of a result: "" when it is no error, the "error" of the
// structured content toolshed gives its own errors (bridge.ErrorResult), else
// tool_error, for a tool's own error result (whose content is the server's, never a
// label).
func errorCodeOf(res *mcp.CallToolResult) string {
	if res == nil || !res.IsError {
		return ""
	}
	if m, ok := res.StructuredContent.(map[string]string); ok && m["error"] != "" {
		return m["error"]
	}
	return string(ToolError)
}

// call records a call of a real tool, as the activity log has it, that answered res.
func (r *recorder) call(a activity, tool *catalog.Tool, res *mcp.CallToolResult, d time.Duration) {
	code := errorCodeOf(res)
	if a.Outcome == "error" {
		// The tool's own error result, forwarded as the server sent it (its IsError
		// is in the forwarded bytes, not in res).
		code = string(ToolError)
	}
	r.m.Call(tool.Server, metricOutcome(a.Outcome), code, d)
	if r.log == nil {
		return
	}
	rank, query := r.links.Found(r.linkKey(a.Session), tool.Qualified)
	r.log.Call(searchlog.Call{
		Time: a.Time, Source: "gateway", Profile: a.Profile, Session: a.Session, Subject: a.Subject,
		Tool: tool.Qualified, Server: tool.Server, Outcome: callOutcome(a.Outcome),
		Duration: d, Rank: rank, Query: query,
	})
}

// refused records a tool_call that named a tool but did not reach it: an unknown tool,
// or arguments its schema refuses.
func (r *recorder) refused(ss *mcp.ServerSession, profile string, plan *policy.Plan, name string, d time.Duration) {
	if r.m != nil {
		// A tool the profile has, with arguments its schema refuses, failed as a
		// direct call of it does (invalid_arguments); any other was refused.
		server, outcome := "", metrics.Refused
		if t, err := plan.Lookup(name); err == nil {
			server, outcome = t.Server, searchlog.OutcomeFailed
		}
		r.m.Call(server, outcome, string(search.InvalidToolInput), d)
	}
	if r.log == nil {
		return
	}
	c := searchlog.Call{Time: time.Now().Add(-d), Source: "gateway", Profile: profile, Session: r.tag(ss), Subject: r.subject(ss), Tool: name, Outcome: searchlog.OutcomeFailed, Duration: d}
	if t, err := plan.Lookup(name); err == nil {
		c.Tool, c.Server = t.Qualified, t.Server
	}
	c.Rank, c.Query = r.links.Found(r.linkKey(c.Session), c.Tool)
	r.log.Call(c)
}

// callOutcome maps an activity log outcome to the search log's.
func callOutcome(activity string) string {
	switch activity {
	case "ok":
		return searchlog.OutcomeOK
	case "error":
		return searchlog.OutcomeToolError
	case "timeout":
		return searchlog.OutcomeTimeout
	case "cancelled":
		return searchlog.OutcomeCancelled
	case "unavailable":
		return searchlog.OutcomeUnavailable
	}
	// tool_error (the server answered with a JSON-RPC error), invalid_arguments,
	// denied, declined, rate_limited, expired: the call did not run as asked.
	return searchlog.OutcomeFailed
}

// metricOutcome maps an activity log outcome to toolshed_calls_total's: the search log's
// outcome, or refused for a call the gateway itself refused to run (the hooks denied it,
// the user declined it, the rate limit stopped it).
func metricOutcome(activity string) string {
	switch activity {
	case "denied", "declined", "rate_limited":
		return metrics.Refused
	}
	return callOutcome(activity)
}
