// Package bridge defines the three tools that stand in for deferred tools when tool
// search is on — tool_search, tool_describe and tool_call — and handles them. It speaks
// no protocol: every front (the MCP gateway, the library) renders its definitions and
// results in its own wire format, and calls the real tool its own way, so that hooks and
// logs see the real tool's name and never "tool_call".
package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/tokens"
)

// The bridge tools' names.
const (
	SearchTool   = "tool_search"
	DescribeTool = "tool_describe"
	CallTool     = "tool_call"
)

// IsBridge reports whether name is one of the bridge tools.
func IsBridge(name string) bool {
	return name == SearchTool || name == DescribeTool || name == CallTool
}

// Definition is a tool definition in MCP's shape.
type Definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Definitions returns the bridge tools for plan: their text names how many tools are
// deferred and from which servers, so the model knows what searching can find.
func Definitions(plan *policy.Plan) []Definition { return DefinitionsStarting(plan, nil) }

// DefinitionsStarting is Definitions while the servers named in starting are still in
// their first start: tool_search's description names them too, so that a model (and
// the user reading the tool list) answered before they were up knows more tools are
// coming rather than that searching the few listed is all there is.
func DefinitionsStarting(plan *policy.Plan, starting []string) []Definition {
	servers, seen := []string{}, map[string]bool{}
	for _, t := range plan.Deferred {
		if !seen[t.Server] {
			seen[t.Server] = true
			servers = append(servers, t.Server)
		}
	}
	from := nameServers(servers)
	switch {
	case from != "" && plan.Config.ListingTokens > 0:
		from = ", from " + fmt.Sprint(len(servers)) + " " + plural(len(servers), "server", "servers") + ": " + serverListing(plan.Deferred, plan.Config.ListingTokens)
	case from != "":
		from = " (servers: " + from + ")"
	}
	if len(starting) > 0 {
		verb := "servers still starting"
		if len(starting) == 1 {
			verb = "server still starting"
		}
		from += fmt.Sprintf(". %d %s: %s; their tools appear when they are up", len(starting), verb, nameServers(starting))
	}
	return []Definition{
		{
			Name: SearchTool,
			Description: fmt.Sprintf("Search %d more tools that are not listed%s. Returns the best matches "+
				"with their required parameters. Call tool_describe for a match's full schema, then tool_call to run it.",
				len(plan.Deferred), from),
			InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
				`"query":{"type":"string","description":"What the tool should do, in a few words (or its name; select:NAME,NAME gets named tools)"},`+
				`"queries":{"type":"array","items":{"type":"string"},"maxItems":%d,"description":"More queries to run at once"},`+
				`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"Results per query (default %d)"}},`+
				`"required":["query"]}`, MaxQueries-1, plan.Config.MaxSearchLimit, plan.Config.SearchDefaultLimit)),
		},
		{
			Name:        DescribeTool,
			Description: "Get the full definition and input schema of a tool found by tool_search.",
			InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
				`"name":{"type":"string","description":"The tool's name as tool_search gave it"},`+
				`"names":{"type":"array","items":{"type":"string"},"maxItems":%d,"description":"More tool names"}},"required":["name"]}`, MaxDescribe-1)),
		},
		{
			Name:        CallTool,
			Description: "Call a tool found by tool_search with arguments that match its input schema.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"name":{"type":"string","description":"The tool's name as tool_search gave it"},` +
				`"arguments":{"type":"object","description":"The tool's arguments"}},"required":["name","arguments"]}`),
		},
	}
}

// nameServers lists server names while they fit in about 160 characters, and how many
// more there are, so the definitions stay small however many servers there are.
func nameServers(servers []string) string {
	named := 0
	for size := 0; named < len(servers) && size+len(servers[named]) <= 160; named++ {
		size += len(servers[named]) + 2
	}
	list := strings.Join(servers[:named], ", ")
	if rest := len(servers) - named; rest > 0 {
		list += fmt.Sprintf(" and %d more", rest)
	}
	return strings.TrimPrefix(list, " and ")
}

// Tokens is the o200k_base token cost of definitions, each counted in the same shape as
// catalog tools (see catalog.Tool.Definition).
func Tokens(defs []Definition) int {
	n := 0
	for _, d := range defs {
		t := catalog.Tool{Qualified: d.Name, Description: d.Description, InputSchema: d.InputSchema}
		n += tokens.Count(string(t.Definition()))
	}
	return n
}

// Result is the outcome of a bridge call, ready for any front to render: Text for the
// model, Structured for clients that read structured content.
type Result struct {
	Text       string
	Structured any
	IsError    bool
	// Code classifies an error (search.InvalidToolInput, ...); empty on success.
	Code search.Code
}

// ErrorResult builds the result of a failed call: the message for the model, and
// {"error": code, "message": message} as structured content.
func ErrorResult(code search.Code, format string, args ...any) Result {
	msg := fmt.Sprintf(format, args...)
	return Result{Text: msg, IsError: true, Code: code, Structured: map[string]string{"error": string(code), "message": msg}}
}

// jsonResult renders v as both text and structured content.
func jsonResult(v any) Result {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ErrorResult(search.Unavailable, "toolshed could not encode the result: %v", err)
	}
	return Result{Text: strings.TrimSpace(b.String()), Structured: v}
}

// Bridge answers the bridge tools for one session: its plan and the index of the plan's
// snapshot. A Bridge is immutable and safe for concurrent use.
//
// A session limited to a scope must be planned over the scope's own catalog
// (policy.Scope.Catalog), and Index be that catalog's: an index of every tool would let
// the tools outside the scope change what the session finds, and so tell of them.
type Bridge struct {
	Plan *policy.Plan
	// Index is the index of Plan.Snapshot (of a catalog with its hash); a search with
	// another fails rather than mix up tools.
	Index *search.Index
	// Rank, when set, ranks tool_search's results in place of Index.Search, with the
	// same options and errors: a hybrid search of words and embeddings (package hybrid)
	// when the front has one.
	Rank func(query string, opts search.Options) ([]search.Result, error)
	// Unsearched are the servers the session may use whose tools are not in Index now,
	// still starting or down: a search that finds fewer tools than it asked for names
	// them, so that "no tool matched" does not send the model looking for another tool
	// when the one it wants is on a server that is down. A front must list only servers
	// the session may use: the others it must never learn of.
	Unsearched []Unsearched
}

// Unsearched is a server whose tools tool_search could not look through.
type Unsearched struct {
	Server string `json:"server"`
	// State is Starting or Restarting.
	State string `json:"state"`
	// RetryIn, for a restarting server that waits before it starts again, is how long
	// it waits, in seconds (rounded up); 0 when it is starting again now.
	RetryIn int `json:"retry_in_seconds,omitempty"`
}

// The states of an Unsearched server.
const (
	// Starting: the server is in its first start (an npx server may be installing).
	Starting = "starting"
	// Restarting: the server stopped, or failed to start, and is started again.
	Restarting = "restarting"
	// NeedsSignIn: the server asks for OAuth sign-in, which the user gives with
	// `toolshed auth login SERVER`.
	NeedsSignIn = "needs sign-in"
)

// unsearchedText says which servers could not be searched and until when, for people
// and models: "1 server is down: github (restarting in 4s); its tools cannot be
// searched until it is back".
func unsearchedText(list []Unsearched) string {
	var down, starting, signIn []string
	for _, u := range list {
		switch {
		case u.State == NeedsSignIn:
			signIn = append(signIn, fmt.Sprintf("%s (run `toolshed auth login %s`)", u.Server, u.Server))
		case u.State == Starting:
			starting = append(starting, u.Server)
		case u.RetryIn > 0:
			down = append(down, fmt.Sprintf("%s (restarting in %ds)", u.Server, u.RetryIn))
		default:
			down = append(down, u.Server+" (restarting now)")
		}
	}
	var parts []string
	servers := func(n int, what string) string {
		if n == 1 {
			return "1 server is " + what
		}
		return fmt.Sprintf("%d servers are %s", n, what)
	}
	if len(down) > 0 {
		parts = append(parts, servers(len(down), "down: ")+strings.Join(down, ", "))
	}
	if len(starting) > 0 {
		parts = append(parts, servers(len(starting), "still starting: ")+strings.Join(starting, ", "))
	}
	if len(signIn) > 0 {
		need := "1 server needs sign-in: "
		if len(signIn) > 1 {
			need = fmt.Sprintf("%d servers need sign-in: ", len(signIn))
		}
		parts = append(parts, need+strings.Join(signIn, ", "))
	}
	until := "back"
	switch {
	case len(signIn) == len(list):
		until = "signed in"
	case len(starting) > 0:
		until = "up"
	}
	if len(list) == 1 {
		return parts[0] + "; its tools cannot be searched until it is " + until
	}
	return strings.Join(parts, "; ") + "; their tools cannot be searched until they are " + until
}

// Match is one tool_search result.
type Match struct {
	Name        string   `json:"name"`
	Server      string   `json:"server"`
	Description string   `json:"description,omitempty"`
	Required    []string `json:"required,omitempty"`
}

// SearchResult is what tool_search returns.
type SearchResult struct {
	Matches []Match `json:"matches"`
	// Searched is how many tools the search looked through.
	Searched int `json:"searched"`
	// Confidence is LowConfidence when no match fits the query surely (see weak).
	Confidence string `json:"confidence,omitempty"`
	Hint       string `json:"hint,omitempty"`
	// Unavailable are the servers whose tools could not be searched (Bridge.Unsearched),
	// when the search found fewer tools than it asked for.
	Unavailable []Unsearched `json:"unavailable,omitempty"`
}

// Handle answers tool_search and tool_describe. tool_call is not handled here (see
// ResolveCall): the front calls the real tool, so that its hooks see the real name.
func (b *Bridge) Handle(name string, args json.RawMessage) Result {
	switch name {
	case SearchTool:
		return b.Search(args)
	case DescribeTool:
		return b.Describe(args)
	case CallTool:
		return ErrorResult(search.InvalidToolInput, "tool_call is answered by calling the real tool; this front did not route it")
	}
	return ErrorResult(search.InvalidToolInput, "%q is not a bridge tool", name)
}

// parseLimit reads tool_search's limit: absent or null means not asked; a number or a
// numeric string is accepted.
func parseLimit(raw json.RawMessage) (int, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		raw = json.RawMessage(strings.TrimSpace(s))
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) {
		return 0, false, fmt.Errorf("\"limit\" must be a whole number, got %s", raw)
	}
	// Any limit outside int32 is clamped by the caller all the same.
	return int(max(min(f, math.MaxInt32), math.MinInt32)), true, nil
}

// Description is what tool_describe returns: the tool's definition with its schemas
// exactly as its server sent them.
type Description struct {
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Describe answers tool_describe: {"name": string, "names"?: [string, ...]}. With
// names, the tools named (name first, up to MaxDescribe in all) are answered as
// {"tools": [...]} in that order; a name that is no tool fails the whole call, saying
// which.
func (b *Bridge) Describe(args json.RawMessage) Result {
	var in struct {
		Name  *string  `json:"name"`
		Names []string `json:"names"`
	}
	if r, ok := decodeArgs(DescribeTool, args, &in); !ok {
		return r
	}
	var names []string
	if in.Name != nil && strings.TrimSpace(*in.Name) != "" {
		names = append(names, *in.Name)
	}
	names = appendNew(names, in.Names)
	switch {
	case len(names) == 0:
		return ErrorResult(search.InvalidToolInput, "tool_describe needs a \"name\": a tool name as tool_search returned it, such as {\"name\": \"github__create_issue\"} (more in \"names\")")
	case len(names) > MaxDescribe:
		return ErrorResult(search.InvalidToolInput, "tool_describe describes at most %d tools at once, got %d: describe the rest in another call", MaxDescribe, len(names))
	case len(names) == 1:
		t, r := b.lookup(names[0])
		if t == nil {
			return r
		}
		return jsonResult(Describe(t))
	}
	out := struct {
		Tools []Description `json:"tools"`
	}{Tools: make([]Description, 0, len(names))}
	for _, n := range names {
		t, r := b.lookup(n)
		if t == nil {
			return r
		}
		out.Tools = append(out.Tools, Describe(t))
	}
	return jsonResult(out)
}

// appendNew appends to list the strings of more it lacks, blank ones left out.
func appendNew(list, more []string) []string {
	for _, m := range more {
		if strings.TrimSpace(m) != "" && !slices.Contains(list, m) {
			list = append(list, m)
		}
	}
	return list
}

// Describe returns t's description as tool_describe gives it.
func Describe(t *catalog.Tool) Description {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	return Description{Name: t.Qualified, Server: t.Server, Title: t.Title, Description: t.Description, InputSchema: schema, OutputSchema: t.OutputSchema, Annotations: t.Annotations}
}

// ResolveCall checks a tool_call — {"name": string, "arguments": object} — and returns
// the real tool and its arguments, validated against the tool's input schema. When the
// call cannot go ahead it returns nil and the error result to send back instead; the
// tool is then not called.
func (b *Bridge) ResolveCall(args json.RawMessage) (*catalog.Tool, json.RawMessage, Result) {
	var in struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if r, ok := decodeArgs(CallTool, args, &in); !ok {
		return nil, nil, r
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		return nil, nil, ErrorResult(search.InvalidToolInput, "tool_call needs a \"name\" (a tool name from tool_search) and \"arguments\" (an object), such as {\"name\": \"github__create_issue\", \"arguments\": {\"title\": \"...\"}}")
	}
	if IsBridge(strings.TrimSpace(*in.Name)) {
		return nil, nil, ErrorResult(search.InvalidToolInput, "tool_call cannot call the bridge tool %s; call %s directly", *in.Name, *in.Name)
	}
	t, r := b.lookup(*in.Name)
	if t == nil {
		return nil, nil, r
	}
	callArgs, err := CheckArguments(t, in.Arguments)
	if err != nil {
		return nil, nil, ErrorResult(search.InvalidToolInput, "%v", err)
	}
	return t, callArgs, Result{}
}

// CheckArguments decodes a call's arguments (see DecodeArguments) and validates them
// against t's input schema (see ValidateArguments).
func CheckArguments(t *catalog.Tool, raw json.RawMessage) (json.RawMessage, error) {
	args, err := DecodeArguments(raw)
	if err != nil {
		return nil, err
	}
	if err := validateArguments(t, args, true); err != nil { // DecodeArguments checked args are valid JSON
		return nil, err
	}
	return args, nil
}

// lookup finds a tool the session may use; the error result is the same for a tool that
// does not exist and for one outside the session's scope.
func (b *Bridge) lookup(name string) (*catalog.Tool, Result) {
	t, err := b.Plan.Lookup(name)
	if err != nil {
		if errors.Is(err, catalog.ErrAmbiguous) {
			return nil, ErrorResult(search.InvalidToolInput, "%v", err)
		}
		return nil, ErrorResult(search.InvalidToolInput, "no tool named %q is available; use tool_search to find the tool's name", strings.TrimSpace(name))
	}
	return t, Result{}
}

// decodeArgs decodes a bridge tool's arguments into v. Absent arguments decode as {}; a
// JSON string holding an object is unwrapped.
func decodeArgs(tool string, args json.RawMessage, v any) (Result, bool) {
	obj, err := DecodeArguments(args)
	if err == nil {
		err = json.Unmarshal(obj, v)
	}
	if err != nil {
		return ErrorResult(search.InvalidToolInput, "%s: the arguments must be a JSON object: %v", tool, err), false
	}
	return Result{}, true
}

// errorFrom turns a search error into a result, keeping its code.
func errorFrom(err error) Result {
	if se, ok := err.(*search.Error); ok {
		return ErrorResult(se.Code, "%s", se.Message)
	}
	return ErrorResult(search.Unavailable, "the search failed: %v; retry shortly", err)
}

// Snippet shortens a description for search results: its first paragraph, cut at a word
// boundary to at most max characters.
func Snippet(s string, max int) string {
	if max <= 0 {
		return ""
	}
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	if i := strings.Index(s, "\n\n"); i > 0 {
		s = s[:i]
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return search.Truncate(s, max-1) + "…"
}
