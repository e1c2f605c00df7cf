package toolsearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/searchlog/record"
)

// Limits of the client-side search tool's "limit" input.
const (
	// DefaultSearchLimit is the number of tools a search returns when no limit is asked.
	DefaultSearchLimit = policy.DefaultSearchDefaultLimit
	// MaxSearchLimit is the most tools one search of the model returns; larger limits
	// are cut to it.
	MaxSearchLimit = policy.DefaultMaxSearchLimit
)

// indexes holds the search indexes of recent snapshots by content hash, so that
// Searchers over an unchanged catalog (a new one per request, say) share one index.
var indexes search.Cache

// Searcher is a client-side tool search over the deferred tools of a request: a custom
// tool (see Definition) whose results are tool_reference blocks, which make the Messages
// API load the referenced tools' definitions, ranked by toolshed's search (BM25F with
// exact-name matches first, then substring and misspelling fallbacks). It finds only
// the tools that Tools, given the same snapshot and options, sends deferred, so every
// tool it references is one of the request's tools. A Searcher is immutable and safe
// for concurrent use.
type Searcher struct {
	plan   *plan
	index  *search.Index
	hybrid *hybrid.Searcher // nil: words alone (see WithEmbeddings)
	log    Recorder
	// catalogTokens is what the deferred tools' definitions cost, when logging.
	catalogTokens int
}

// NewSearcher returns a Searcher over the tools that snap under opts defers (see
// Tools); opts.Search is ignored. Pass Options.Search = SearchClient to Tools to put the
// Searcher's Definition in the request, or add it yourself.
//
// With a Scope, the Searcher searches the scope's own catalog (see policy.Scope.Catalog):
// what it finds, and in which order, depends on the tools in scope alone, exactly as
// for a snapshot of only those tools, so that a model limited to them learns nothing
// of the others.
func NewSearcher(snap *catalog.Snapshot, opts Options) (*Searcher, error) {
	p, err := decide(snap, opts)
	if err != nil {
		return nil, err
	}
	if scoped := opts.Scope.Catalog(snap); scoped != snap {
		snap = scoped
		if p, err = decide(snap, opts); err != nil {
			return nil, err
		}
	}
	s := &Searcher{plan: p, index: indexes.Index(snap), log: opts.Log}
	if s.log != nil {
		for _, t := range p.deferred {
			s.catalogTokens += snap.ToolTokens(t)
		}
	}
	return s, nil
}

// WithEmbeddings returns a copy of s that ranks by words and embeddings fused (see
// package hybrid), as Anthropic's cookbook does for client-side tool search, but with
// toolshed's word ranking kept and exact names still first. It embeds the catalog's
// tools with c before it returns, only those the cache lacks (see embed.Build and
// build), so call it once per catalog rather than per request. Each query is embedded
// within opts.QueryTimeout; when that fails, the copy answers with words alone and
// logs it once.
func (s *Searcher) WithEmbeddings(ctx context.Context, c *embed.Client, build embed.BuildOptions, opts hybrid.Options) (*Searcher, error) {
	vecs, _, err := embed.Build(ctx, c, embed.ToolTexts(s.index.Snapshot()), build)
	if err != nil {
		return nil, err
	}
	out := *s
	out.hybrid = hybrid.New(s.index, vecs, c, opts)
	return &out, nil
}

// Definition returns the search tool to add to the request: a custom tool named
// ClientToolName taking {"query": string, "limit"?: integer}, never deferred. Each call
// returns a new value, which the caller may modify.
func (s *Searcher) Definition() anthropic.ToolParam { return definition(s.plan) }

// Deferred returns the tools the Searcher searches, in catalog order. The slice is
// shared: do not modify it.
func (s *Searcher) Deferred() []*catalog.Tool { return s.plan.deferred }

// definition returns the client-side search tool for the deferred tools of plan. Its
// description says how many tools it searches and names their servers while that
// stays short, so the model knows what searching can find.
func definition(p *plan) anthropic.ToolParam {
	var servers []string
	seen := map[string]bool{}
	for _, t := range p.deferred {
		if !seen[t.Server] {
			seen[t.Server] = true
			servers = append(servers, t.Server)
		}
	}
	from := ""
	if len(servers) > 0 {
		const maxNamed = 6
		named := servers[:min(len(servers), maxNamed)]
		from = " (servers: " + strings.Join(named, ", ")
		if rest := len(servers) - len(named); rest > 0 {
			from += fmt.Sprintf(" and %d more", rest)
		}
		from += ")"
	}
	return anthropic.ToolParam{
		Name: ClientToolName,
		Description: param.NewOpt(fmt.Sprintf("Search %d tools that are not loaded yet%s. "+
			"Describe the action you need in a few words, or give a tool's name. "+
			"The best matches are loaded so you can call them directly.", len(p.deferred), from)),
		InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{
				"query": map[string]any{
					"type":        "string",
					"description": "What the tool should do, in a few words, or its name",
				},
				"limit": map[string]any{
					"type":        "integer",
					"minimum":     1,
					"maximum":     MaxSearchLimit,
					"description": fmt.Sprintf("Tools to load (default %d)", DefaultSearchLimit),
				},
			},
			Required: []string{"query"},
		},
	}
}

// Find returns the deferred tools that best match query, best first: at most limit of
// them (0 means DefaultSearchLimit; larger values are cut to search.MaxLimit), and none
// when nothing matches. A bad query (empty, or longer than MaxQueryLen characters) is an
// error that wraps ErrEmptyQuery or ErrQueryTooLong and search.ErrInvalidToolInput.
func (s *Searcher) Find(query string, limit int) ([]*catalog.Tool, error) {
	if s.log == nil {
		return s.find(query, limit)
	}
	start := time.Now()
	tools, err := s.find(query, limit)
	s.record(query, tools, err, time.Since(start))
	return tools, err
}

// record queues a search for the log.
func (s *Searcher) record(query string, tools []*catalog.Tool, err error, latency time.Duration) {
	rec := record.Search{Time: time.Now().Add(-latency), Source: "library", Query: query, Mode: "bm25", Latency: latency, CatalogTokens: s.catalogTokens}
	var se *search.Error
	switch {
	case errors.As(err, &se):
		rec.Error = string(se.Code)
	case errors.Is(err, search.ErrInvalidToolInput):
		rec.Error = string(search.InvalidToolInput)
	case err != nil:
		rec.Error = string(search.Unavailable)
	}
	rec.Results = make([]record.Hit, len(tools))
	for i, t := range tools {
		rec.Results[i] = record.Hit{Tool: t.Qualified, Rank: i + 1}
		// The tools are the cached index's, whose snapshot may be another copy of s.snap.
		rec.ResultTokens += s.index.Snapshot().ToolTokens(t)
	}
	s.log.Search(rec)
}

func (s *Searcher) find(query string, limit int) ([]*catalog.Tool, error) {
	if err := CheckQuery(KindBM25, query); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	opts := search.Options{Limit: limit, Allow: s.plan.inDeferred}
	var found []search.Result
	var err error
	if s.hybrid != nil {
		found, err = s.hybrid.Search(context.Background(), query, opts)
	} else {
		found, err = s.index.Search(query, opts)
	}
	if err != nil {
		return nil, err
	}
	tools := make([]*catalog.Tool, len(found))
	for i, r := range found {
		tools[i] = r.Tool
	}
	return tools, nil
}

// Handle answers a call of the search tool. It is HandleInput(block.ID, block.Input).
func (s *Searcher) Handle(block anthropic.ToolUseBlock) anthropic.ToolResultBlockParam {
	if block.Name != "" && block.Name != ClientToolName {
		return errorResult(block.ID, fmt.Sprintf("%s cannot answer a call of %q; route only calls of %s to Searcher.Handle", ClientToolName, block.Name, ClientToolName))
	}
	return s.HandleInput(block.ID, block.Input)
}

// HandleInput answers a call of the search tool with id toolUseID and input
// {"query": string, "limit"?: integer}. The result's content is one tool_reference block
// per tool found, best first,
//
//	{"type": "tool_result", "tool_use_id": "toolu_01",
//	 "content": [{"type": "tool_reference", "tool_name": "github__create_issue"}]}
//
// and an empty list when nothing matches. A malformed input or a bad query gives an
// is_error result whose text says what is wrong and how to fix it. A limit outside
// 1..MaxSearchLimit is clamped to it.
func (s *Searcher) HandleInput(toolUseID string, input json.RawMessage) anthropic.ToolResultBlockParam {
	var in struct {
		Query *string         `json:"query"`
		Limit json.RawMessage `json:"limit"`
	}
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return errorResult(toolUseID, fmt.Sprintf("invalid_tool_input: the input must be a JSON object such as {\"query\": \"create github issue\"}: %v", err))
	}
	if in.Query == nil {
		return errorResult(toolUseID, "invalid_tool_input: \"query\" is missing; describe the tool you need in a few words, such as {\"query\": \"create github issue\"}")
	}
	limit, err := parseLimit(in.Limit)
	if err != nil {
		return errorResult(toolUseID, "invalid_tool_input: "+err.Error())
	}
	tools, err := s.Find(*in.Query, limit)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, search.ErrInvalidToolInput) && !strings.HasPrefix(msg, string(search.InvalidToolInput)) {
			msg = string(search.InvalidToolInput) + ": " + msg
		}
		return errorResult(toolUseID, msg)
	}
	content := make([]anthropic.ToolResultBlockParamContentUnion, len(tools))
	for i, t := range tools {
		content[i] = anthropic.ToolResultBlockParamContentUnion{OfToolReference: &anthropic.ToolReferenceBlockParam{ToolName: t.Qualified}}
	}
	return anthropic.ToolResultBlockParam{ToolUseID: toolUseID, Content: content}
}

// parseLimit reads the search tool's limit: absent or null means DefaultSearchLimit; a
// whole number (or a string holding one) is clamped to 1..MaxSearchLimit.
func parseLimit(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return DefaultSearchLimit, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			raw = json.RawMessage(strings.TrimSpace(s))
		}
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) {
		return 0, fmt.Errorf("\"limit\" must be a whole number from 1 to %d, got %s; leave it out for %d results", MaxSearchLimit, raw, DefaultSearchLimit)
	}
	return int(min(max(f, 1), MaxSearchLimit)), nil
}

// errorResult is an is_error tool result holding msg.
func errorResult(toolUseID, msg string) anthropic.ToolResultBlockParam {
	return anthropic.ToolResultBlockParam{
		ToolUseID: toolUseID,
		IsError:   param.NewOpt(true),
		Content:   []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: msg}}},
	}
}
