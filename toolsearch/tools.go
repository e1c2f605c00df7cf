package toolsearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/searchlog"
)

// SearchKind says which search tool Tools adds to a request.
type SearchKind string

// The search tools Tools can add.
const (
	// SearchNone adds no search tool. The request may still defer tools when at least
	// one tool stays loaded, for instance when the caller adds a search tool of its own.
	SearchNone SearchKind = ""
	// SearchRegex adds Anthropic's server-side regex search tool,
	// {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}.
	SearchRegex SearchKind = "regex"
	// SearchBM25 adds Anthropic's server-side BM25 search tool,
	// {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}.
	SearchBM25 SearchKind = "bm25"
	// SearchClient adds toolshed's client-side search tool, the Definition of a
	// Searcher built from the same snapshot and options; the caller answers its calls
	// with Searcher.Handle.
	SearchClient SearchKind = "client"
)

// The names of the search tools as they appear in tool_use and server_tool_use blocks.
const (
	RegexToolName  = "tool_search_tool_regex"
	BM25ToolName   = "tool_search_tool_bm25"
	ClientToolName = "search_tools"
)

// MaxDeferred is the most tools one request may defer: the Messages API rejects more.
const MaxDeferred = 10000

// Errors Tools wraps; test for them with errors.Is.
var (
	// ErrAllDeferred: every tool of the request would be deferred and there is no
	// search tool, which the Messages API rejects ("At least one tool must have
	// defer_loading=false").
	ErrAllDeferred = errors.New("every tool is deferred")
	// ErrTooManyDeferred: more than MaxDeferred tools would be deferred.
	ErrTooManyDeferred = errors.New("too many deferred tools")
	// ErrOptions: the options are malformed (an unknown search kind, a bad scope
	// pattern, no snapshot).
	ErrOptions = errors.New("invalid tool search options")
)

// Options say which tools a request carries and which of them are deferred.
type Options struct {
	// Servers holds each server's defer settings by server name, in the form of
	// Anthropic's mcp_toolset: DefaultConfig applies to every tool of the server, and
	// Configs, keyed by the tool's own (unqualified) name, override it per tool.
	// Enabled false leaves a tool out of the request; DeferLoading says whether it is
	// deferred. Rules for servers the snapshot does not have are ignored.
	Servers map[string]policy.ServerRules
	// DeferByDefault is the global default for tools that neither their server's
	// DefaultConfig nor their own config settles: true defers them. The zero Options
	// defer nothing.
	DeferByDefault bool
	// Scope limits the request to some servers and tools; the zero Scope has them all.
	// Tools outside it are left out of the request and are never found by a Searcher.
	Scope policy.Scope
	// Search is the search tool to add (SearchNone, SearchRegex, SearchBM25 or
	// SearchClient). It is added, never deferred, when at least one tool is deferred,
	// and left out otherwise, since there would be nothing to search.
	Search SearchKind
	// Log, when set, records every search a Searcher runs (Source "library"), for
	// toolshed stats and the learned field. Recording only queues, so it never slows
	// a search. Tools ignores it.
	Log *searchlog.Log
}

// plan is what a request carries of a snapshot: the tools sent loaded and the tools sent
// deferred, both enabled and in scope, in catalog order.
type plan struct {
	visible  []*catalog.Tool
	deferred []*catalog.Tool
	// sent has every tool of visible and deferred; inDeferred those of deferred (for
	// search.Options.Allow).
	sent, inDeferred *catalog.Set
}

// decide returns the plan of snap under opts: policy.Split with opts.DeferByDefault as
// the global default. It does not call policy.Decide, which also counts every tool's
// tokens for the auto mode; that costs far more than the rest of a request's assembly
// and is not needed here.
func decide(snap *catalog.Snapshot, opts Options) (*plan, error) {
	if snap == nil {
		return nil, fmt.Errorf("%w: the catalog snapshot is nil; build one with catalog.Build (see SourceFromMCP for MCP servers)", ErrOptions)
	}
	if err := opts.Scope.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	p := &plan{sent: catalog.NewSet(snap), inDeferred: catalog.NewSet(snap)}
	p.visible, p.deferred = policy.Split(snap, opts.Servers, opts.Scope, opts.DeferByDefault)
	for _, t := range p.visible {
		p.sent.Add(t.Index)
	}
	for _, t := range p.deferred {
		p.sent.Add(t.Index)
		p.inDeferred.Add(t.Index)
	}
	return p, nil
}

// Tools returns the tools of a Messages API request for snap under opts: the search tool
// Options.Search names (first, never deferred, and only when some tool is deferred),
// then every enabled tool in scope in catalog order. Each tool is a ToolParam with the
// tool's qualified name (see catalog.Tool.Qualified; look a tool_use's name up with
// snap.Lookup to find the server and tool to call), its description and its input schema
// exactly as the catalog holds them (compacted), and defer_loading true when it is
// deferred (absent otherwise). Pinned tools (catalog.Tool.Pinned) are never deferred.
//
// Tools fails with ErrAllDeferred when every tool would be deferred and there is no
// search tool, and with ErrTooManyDeferred when more than MaxDeferred tools would be:
// the Messages API rejects both requests. It also rejects a deferred tool with
// cache_control, so set a cache breakpoint only on a tool that is not deferred.
func Tools(snap *catalog.Snapshot, opts Options) ([]anthropic.ToolUnionParam, error) {
	p, err := decide(snap, opts)
	if err != nil {
		return nil, err
	}
	var searchTool *anthropic.ToolUnionParam
	switch opts.Search {
	case SearchNone:
	case SearchRegex:
		searchTool = &anthropic.ToolUnionParam{OfToolSearchToolRegex20251119: &anthropic.ToolSearchToolRegex20251119Param{
			Type: anthropic.ToolSearchToolRegex20251119TypeToolSearchToolRegex20251119,
		}}
	case SearchBM25:
		searchTool = &anthropic.ToolUnionParam{OfToolSearchToolBm25_20251119: &anthropic.ToolSearchToolBm25_20251119Param{
			Type: anthropic.ToolSearchToolBm25_20251119TypeToolSearchToolBm25_20251119,
		}}
	case SearchClient:
		def := definition(p)
		searchTool = &anthropic.ToolUnionParam{OfTool: &def}
	default:
		return nil, fmt.Errorf("%w: search kind %q is unknown; use SearchRegex, SearchBM25, SearchClient or SearchNone", ErrOptions, opts.Search)
	}
	if n := len(p.deferred); n > MaxDeferred {
		return nil, fmt.Errorf("%w: %d tools would be deferred and the Messages API accepts at most %d; narrow Options.Scope, disable tools (enabled: false), or split the catalog across agents", ErrTooManyDeferred, n, MaxDeferred)
	}
	if len(p.deferred) > 0 && len(p.visible) == 0 && searchTool == nil {
		return nil, fmt.Errorf("%w: all %d tools would be deferred and there is no search tool, so the model could load none of them (the Messages API rejects this); set Options.Search, or set defer_loading false for at least one tool", ErrAllDeferred, len(p.deferred))
	}

	out := make([]anthropic.ToolUnionParam, 0, len(p.visible)+len(p.deferred)+1)
	if searchTool != nil && len(p.deferred) > 0 {
		out = append(out, *searchTool)
	}
	for _, t := range snap.Tools() {
		if p.sent.Has(t.Index) {
			tp := toolParam(t, p.inDeferred.Has(t.Index))
			out = append(out, anthropic.ToolUnionParam{OfTool: &tp})
		}
	}
	return out, nil
}

// toolParam returns t as a request tool.
func toolParam(t *catalog.Tool, deferred bool) anthropic.ToolParam {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	p := anthropic.ToolParam{
		Name: t.Qualified,
		// The raw schema goes out as it is (the encoder compacts it): decoding it into
		// the SDK's fields would reorder its keys and round its numbers.
		InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
	}
	if t.Description != "" {
		p.Description = param.NewOpt(t.Description)
	}
	if deferred {
		p.DeferLoading = param.NewOpt(true)
	}
	return p
}

// maxPages bounds the tools/list pages read from one server, so that a server that
// keeps returning cursors cannot hold a caller forever.
const maxPages = 10000

// SourceFromMCP lists the tools of a live MCP server (every page of tools/list) as a
// catalog source named server. Build a snapshot from one or more sources with
// catalog.Build, then pass it to Tools and NewSearcher. The definitions are those the
// go-sdk decoded and encodes again, so a schema's keys come back in sorted order.
func SourceFromMCP(ctx context.Context, server string, cs *mcp.ClientSession) (catalog.Source, error) {
	name, err := catalog.ServerName(server)
	if err != nil {
		return catalog.Source{}, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	if cs == nil {
		return catalog.Source{}, fmt.Errorf("%w: the MCP client session of server %q is nil", ErrOptions, name)
	}
	src := catalog.Source{Server: name, Tools: []json.RawMessage{}, Origin: "mcp:" + name}
	params := &mcp.ListToolsParams{}
	for pages := 0; ; pages++ {
		if pages == maxPages {
			return catalog.Source{}, fmt.Errorf("listing the tools of MCP server %q: tools/list did not end after %d pages", name, maxPages)
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return catalog.Source{}, fmt.Errorf("listing the tools of MCP server %q: %w", name, err)
		}
		for _, t := range res.Tools {
			raw, err := json.Marshal(t)
			if err != nil {
				return catalog.Source{}, fmt.Errorf("encoding tool %q of MCP server %q: %w", t.Name, name, err)
			}
			src.Tools = append(src.Tools, raw)
		}
		if res.NextCursor == "" {
			return src, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// ToolsFromMCP lists the tools of a live MCP server (see SourceFromMCP) and returns them
// as the tools of a request, as Tools does. A tool the catalog cannot use (see
// catalog.Build) is left out; build the snapshot yourself to see why. To answer
// client-side searches as well, build the snapshot once and pass it to both Tools and
// NewSearcher.
func ToolsFromMCP(ctx context.Context, server string, cs *mcp.ClientSession, opts Options) ([]anthropic.ToolUnionParam, error) {
	src, err := SourceFromMCP(ctx, server, cs)
	if err != nil {
		return nil, err
	}
	snap, _ := catalog.Build([]catalog.Source{src})
	return Tools(snap, opts)
}
