package messages

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/learn"
)

// Proxy answers Messages API requests with tool search for an upstream model that has
// none. The zero value is not usable: Upstream must be set. A Proxy is safe for
// concurrent use.
type Proxy struct {
	// Upstream is the model API the requests go to.
	Upstream Upstream
	// MaxIterations caps the upstream calls one request may make while the model keeps
	// searching; when reached, the response ends with stop_reason "pause_turn", as the
	// Anthropic API does for long server tool turns, and the client continues the turn
	// by sending the response back. Zero means 8.
	MaxIterations int
	// MaxSearches caps the searches of one request; searches past it answer
	// too_many_requests. Zero means 16.
	MaxSearches int
	// RegexBudget bounds the time of one regex search; a search past it answers
	// execution_time_exceeded. Zero means search.DefaultRegexBudget.
	RegexBudget time.Duration
	// NewID makes the ids of server_tool_use blocks (without the "srvtoolu_" prefix).
	// Nil means 24 random characters.
	NewID func() string
	// ClientKey, when set, is the key clients must send (as x-api-key, or as
	// Authorization: Bearer): a proxy reachable from other machines spends its
	// upstream key for whoever can reach it. Requests without it get 401
	// authentication_error. Empty means no check.
	ClientKey string
	// AllowHosts lists the Host names accepted, besides loopback ones, on a connection
	// to a loopback address (see frontdoor.Options.AllowHosts): a reverse proxy's.
	AllowHosts []string
	// AllowOrigins lists the browser origins allowed to call the proxy; other
	// cross-origin requests are refused.
	AllowOrigins []string
	// Logger receives one line per request (model, upstream calls, searches, status).
	// It never sees keys or message content. Nil means no logging.
	Logger *slog.Logger
	// Embed, when set, makes tool_search_tool_bm25 fuse its word ranking with the
	// cosine ranking of the deferred tools' embeddings from the user's own model
	// (package hybrid); tool_search_tool_regex stays lexical. Each distinct tools list is
	// embedded once, in the background (only the tools EmbedBuild's cache or store
	// lacks); until its vectors are ready, and whenever the endpoint fails, search
	// answers with words alone and the Logger is told once.
	Embed *embed.Client
	// EmbedBuild shapes the embedding of tools lists: where vectors are kept, progress.
	EmbedBuild embed.BuildOptions
	// EmbedQueryTimeout bounds a query's embedding, and how long a tools list's first
	// search waits for its vectors; zero means hybrid.DefaultQueryTimeout.
	EmbedQueryTimeout time.Duration

	// ToolCacheBytes is the budget, in bytes, of the tools lists kept validated and
	// indexed for the requests that send them again (an estimate of the memory each
	// keeps; see DefaultToolCacheBytes). A list larger than the whole budget is not
	// kept. Zero means DefaultToolCacheBytes.
	ToolCacheBytes int64

	// ClientTools holds the definitions of the tools a client defers behind its own
	// search (Claude Code's ToolSearch, which names them mcp__SERVER__TOOL and since
	// 2.1.332 sends only their names): the catalog of the same MCP servers. With it, or
	// with the definitions a request carries, the Proxy answers that search with
	// toolshed's ranking (see clientsearch.go). Nil means only what requests carry.
	ClientTools *catalog.Snapshot
	// NoClientSearch leaves a client's own search tool to the client.
	NoClientSearch bool

	// SearchLog, when set, records the proxy's searches (its search tools' and its
	// answers to the client's own, Source "proxy") and each call of a deferred tool
	// the model then makes, with the outcome the client's next request reports, tied
	// to the search that found it as the gateway ties them (package recent). A
	// conversation is named by a hash of the client's key and of the session it names
	// (Claude Code's X-Claude-Code-Session-Id); tools by their qualified names
	// (server__tool), as the gateway names the same tools.
	SearchLog SearchRecorder
	// Learn, when set, makes the answers to the client's own search learn from use:
	// the log's queries that led to a successful call of a tool rank it (package
	// learn), as the gateway's search does. Nil learns nothing.
	Learn *learn.Learner

	toolSets toolSetCache
	client   clientState
	records  logState
	embed    embedState
	stop     stopState
}

func (p *Proxy) maxIterations() int {
	if p.MaxIterations > 0 {
		return p.MaxIterations
	}
	return 8
}

func (p *Proxy) maxSearches() int {
	if p.MaxSearches > 0 {
		return p.MaxSearches
	}
	return 16
}

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (p *Proxy) newID() string {
	if p.NewID != nil {
		return "srvtoolu_" + p.NewID()
	}
	b := make([]byte, 24)
	rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return "srvtoolu_" + string(b)
}

// turn is the state of one request's search loop: the content produced so far and the
// deferred tools loaded.
type turn struct {
	ctx      context.Context // the request's: a search's query embedding ends with it
	p        *Proxy
	pr       *prepared
	loaded   map[string]bool
	content  []Block
	searches int
}

func (p *Proxy) newTurn(ctx context.Context, pr *prepared) *turn {
	return &turn{ctx: ctx, p: p, pr: pr, loaded: pr.loadedTools(pr.req.Messages)}
}

// request is what the upstream model gets next: the client's conversation with this
// response's content so far as the assistant's turn (continuing the client's own
// assistant turn when the conversation ends with one).
func (t *turn) request() *Request {
	msgs := t.pr.req.Messages
	if len(t.content) > 0 {
		n := len(msgs)
		msgs = append(msgs[:n:n], Message{Role: "assistant", Content: t.content})
		if msgs[n-1].Role == "assistant" {
			merged := append(append([]Block(nil), msgs[n-1].Content...), t.content...)
			msgs = append(msgs[:n-1:n-1], Message{Role: "assistant", Content: merged})
		}
	}
	return t.pr.render(msgs, t.loaded)
}

// useKind says what a tool_use block from the model is to the proxy.
type useKind int

const (
	clientUse       useKind = iota // a tool the client runs: passed on
	searchUse                      // a call of a search tool: toolshed runs it
	unloadedUse                    // a deferred tool the model named before loading it
	clientSearchUse                // a call of the client's own search: passed on, answered with toolshed's ranking
)

func (t *turn) kind(b Block) useKind {
	if b.Type != "tool_use" {
		return clientUse
	}
	if t.pr.searchTool(b.Name) != nil {
		return searchUse
	}
	if t.pr.clientSearch != nil && b.Name == t.pr.clientSearch.Name && !t.p.NoClientSearch {
		return clientSearchUse
	}
	// Only a server search tool can load a tool here; with the client's own search
	// (Claude Code's ToolSearch) the call goes to the client, whose tool it is.
	if _, ok := t.pr.deferred[b.Name]; ok && !t.loaded[b.Name] && len(t.pr.searches) > 0 {
		return unloadedUse
	}
	return clientUse
}

// serverUse turns the model's tool_use, of kind k, into the server_tool_use block the client sees.
// A call of a deferred tool that was never loaded becomes a search for its exact name
// with the request's first search tool (kind returns unloadedUse only when there is
// one), so that the model gets the tool's schema before it calls it for real.
func (t *turn) serverUse(b Block, k useKind) Block {
	out := Block{Type: "server_tool_use", ID: t.p.newID(), Name: b.Name, Input: orEmptyObject(b.Input)}
	if k == unloadedUse {
		tool := t.pr.searches[0]
		out.Name = tool.Name
		if tool.SearchKind() == "regex" {
			out.Input, _ = json.Marshal(map[string]string{"pattern": "^" + regexp.QuoteMeta(b.Name) + "$"})
		} else {
			out.Input, _ = json.Marshal(map[string]string{"query": b.Name})
		}
	}
	out.Raw = serverUseJSON(out.ID, out.Name, out.Input)
	return out
}

// serverUseJSON is a server_tool_use block, its members in the API's order.
func serverUseJSON(id, name string, input json.RawMessage) json.RawMessage {
	raw, _ := json.Marshal(struct {
		Type   string          `json:"type"`
		ID     string          `json:"id"`
		Name   string          `json:"name"`
		Input  json.RawMessage `json:"input"`
		Caller json.RawMessage `json:"caller"`
	}{"server_tool_use", id, name, input, json.RawMessage(`{"type":"direct"}`)})
	return raw
}

// result runs the search of a server_tool_use made by serverUse for the model's block b,
// loads the tools found, and returns the tool_search_tool_result block.
func (t *turn) result(b, use Block, k useKind) Block {
	var content json.RawMessage
	var names []string
	if k == unloadedUse {
		content, names = refs([]string{b.Name}), []string{b.Name}
	} else {
		start := time.Now()
		tool := t.pr.searchTool(b.Name)
		content, names = t.runSearch(tool, b.Input)
		t.logServerSearch(tool, b.Input, content, names, time.Since(start))
	}
	t.searches++
	for _, n := range names {
		t.loaded[n] = true
	}
	raw, _ := json.Marshal(struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}{"tool_search_tool_result", use.ID, content})
	return Block{Type: "tool_search_tool_result", ToolUseID: use.ID, Content: content, Raw: raw}
}

// absorb adds one upstream response's content to the turn, running its searches, and
// reports whether the model must be asked again: it searched and called nothing the
// client must run.
func (t *turn) absorb(blocks []Block, stop *string) bool {
	searched, client := false, false
	for _, b := range blocks {
		switch k := t.kind(b); k {
		case clientUse, clientSearchUse:
			if b.Type == "tool_use" {
				client = true
			}
			if k == clientSearchUse {
				b = t.answerClientSearch(b)
			} else {
				t.callMade(b)
			}
			t.content = append(t.content, b)
		default:
			use := t.serverUse(b, k)
			t.content = append(t.content, use, t.result(b, use, k))
			searched = true
		}
	}
	return searched && !client && stop != nil && *stop == "tool_use"
}

// usage is the response's usage: the sum over the upstream calls, with the searches.
func (t *turn) usage(sum Usage) Usage {
	if t.searches > 0 {
		if sum.ServerToolUse == nil {
			sum.ServerToolUse = &ServerToolUse{}
		}
		sum.ServerToolUse.ToolSearchRequests += t.searches
	}
	return sum
}

// Create answers a request in one response, calling the upstream model as many times as
// its searches need.
func (p *Proxy) Create(ctx context.Context, req *Request, h http.Header) (*Response, error) {
	ctx, done := p.requestContext(ctx)
	defer done()
	pr, aerr := p.prepare(req)
	if aerr != nil {
		return nil, aerr
	}
	t := p.newTurn(ctx, pr)
	var out *Response
	var sum Usage
	for calls := 1; ; calls++ {
		resp, err := p.Upstream.Create(ctx, t.request(), h)
		if err != nil {
			return nil, stoppedError(ctx, err)
		}
		if out == nil {
			out = resp
		}
		out.Model, out.StopSequence, out.StopReason = resp.Model, resp.StopSequence, resp.StopReason
		sum.Add(resp.Usage)
		if !t.absorb(resp.Content, resp.StopReason) {
			break
		}
		if calls >= p.maxIterations() {
			pause := "pause_turn"
			out.StopReason = &pause
			break
		}
	}
	out.Content = t.content
	if out.Content == nil {
		out.Content = []Block{}
	}
	out.Usage = t.usage(sum)
	return out, nil
}

// CountTokens counts the input tokens of a request as the upstream model would receive
// it on its first call: the deferred tools not loaded are not counted.
func (p *Proxy) CountTokens(ctx context.Context, req *Request, h http.Header) (int, error) {
	ctx, done := p.requestContext(ctx)
	defer done()
	pr, aerr := p.prepare(req)
	if aerr != nil {
		return 0, aerr
	}
	n, err := p.Upstream.CountTokens(ctx, p.newTurn(ctx, pr).request(), h)
	return n, stoppedError(ctx, err)
}
