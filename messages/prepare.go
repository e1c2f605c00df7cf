package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/jsonscan"
	"github.com/toolshed/toolshed/search"
)

// MaxDeferredTools is the most deferred tools one request may carry, as in the API.
const MaxDeferredTools = 10000

// prepared is a validated request with what the search loop needs.
type prepared struct {
	req *Request
	*toolSet
}

// toolSet is a request's validated tools: clients send the same tools with every
// request, so a toolSet is built once per distinct tools list and shared, read-only.
type toolSet struct {
	tools    []Tool           // the tools, with their own copy of their bytes
	raw      []byte           // the tools array as received, if known: tools point into it
	searches []*Tool          // the tool search tools, in request order
	deferred map[string]*Tool // deferred custom tools by name
	names    map[string]*Tool // every tool by name
	catalog  *toolIndex       // search index over the deferred tools; nil when none or no search tool

	clientSearch *Tool     // the client's own search tool (Claude Code's ToolSearch), or nil
	key          [2]uint64 // toolsKey of tools
}

// searchTool returns the search tool called name, or nil.
func (ts *toolSet) searchTool(name string) *Tool {
	for _, t := range ts.searches {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// prepare validates a request as the Messages API would with tool search, and indexes
// its deferred tools. Every error is a 400 invalid_request_error whose message says
// what to fix.
func (p *Proxy) prepare(req *Request) (*prepared, *APIError) {
	if len(req.Messages) == 0 {
		return nil, invalid("messages: at least one message is required")
	}
	ts := req.toolSet
	if ts == nil {
		var err *APIError
		if ts, err = p.tools(req.Tools, req.toolsRaw); err != nil {
			return nil, err
		}
	}
	pr := &prepared{req: req, toolSet: ts}
	for i, m := range req.Messages {
		switch m.Role {
		case "user", "assistant", "system":
			// Claude Code sends system messages inside messages: its environment
			// notes and reminders, in place.
		default:
			return nil, invalid("messages.%d.role: %q is not a role of the Messages API; use \"user\", \"assistant\" or \"system\"", i, m.Role)
		}
		for j, b := range m.Content {
			if err := pr.checkBlock(b, fmt.Sprintf("messages.%d.content.%d", i, j)); err != nil {
				return nil, err
			}
		}
	}
	// Only a valid request changes what the Proxy keeps.
	if !p.NoClientSearch {
		if ts.clientSearch != nil {
			req.Messages = p.client.restore(req.client, req.Messages)
		}
		// count_tokens too: with ENABLE_TOOL_SEARCH=auto, Claude Code counts every
		// tool in full before it defers them.
		p.client.learned.learn(req.client, ts)
	}
	if !req.countTokens {
		p.callsAnswered(req)
	}
	return pr, nil
}

// tools returns the toolSet of a request's tools, from the cache when the same tools
// were seen before. raw is the tools array as received, or nil.
func (p *Proxy) tools(tools []Tool, raw []byte) (*toolSet, *APIError) {
	key := toolsKey(tools)
	if ts := p.toolSets.get(key); ts != nil {
		return ts, nil
	}
	ts, err := newToolSet(tools, raw)
	if err != nil {
		return nil, err
	}
	ts.key = key
	p.toolSets.put(key, ts, p.toolCacheBytes())
	return ts, nil
}

// newToolSet validates tools and indexes the deferred ones.
func newToolSet(tools []Tool, raw []byte) (*toolSet, *APIError) {
	// Own copies, so that the cache does not keep the whole request body alive.
	tools, raw = cloneTools(tools, raw)
	ts := &toolSet{tools: tools, raw: raw, deferred: map[string]*Tool{}, names: make(map[string]*Tool, len(tools))}
	nonDeferred := 0
	for i := range tools {
		t := &tools[i]
		where := fmt.Sprintf("tools.%d", i)
		if t.Type == "mcp_toolset" {
			return nil, invalid("%s: mcp_toolset needs Anthropic's MCP connector, which toolshed proxy does not run; send the server's tools as custom tools with defer_loading (toolsearch.ToolsFromMCP builds them), or put the server behind toolshed serve", where)
		}
		if t.Name == "" {
			return nil, invalid("%s: a tool needs a \"name\"", where)
		}
		if !validToolName(t.Name) {
			return nil, invalid("%s.name: %q must match ^[a-zA-Z0-9_-]{1,128}$ (letters, digits, '_' and '-')", where, t.Name)
		}
		if _, dup := ts.names[t.Name]; dup {
			return nil, invalid("tools: tool names must be unique; %q appears more than once", t.Name)
		}
		ts.names[t.Name] = t
		if kind := t.SearchKind(); kind != "" {
			if t.DeferLoading {
				return nil, invalid("%s: the tool search tool %q cannot have defer_loading=true; it is how the model finds the deferred tools", where, t.Name)
			}
			ts.searches = append(ts.searches, t)
			nonDeferred++
			continue
		}
		if t.DeferLoading && len(t.CacheControl) > 0 && string(t.CacheControl) != "null" {
			return nil, invalid("%s: tool %q has both defer_loading=true and cache_control; deferred tools never enter the cached prompt prefix, so put the cache breakpoint on a tool that is not deferred", where, t.Name)
		}
		if t.IsCustom() {
			if err := checkInputSchema(t.InputSchema); err != "" {
				return nil, invalid("%s.input_schema: %s", where, err)
			}
		} else if t.DeferLoading {
			return nil, invalid("%s: only custom tools can be deferred; %q is a %s tool", where, t.Name, t.Type)
		}
		if t.DeferLoading {
			ts.deferred[t.Name] = t
		} else {
			nonDeferred++
		}
		if isClientSearch(t) {
			ts.clientSearch = t
		}
	}
	if len(ts.deferred) > 0 && nonDeferred == 0 {
		return nil, invalid("At least one tool must have defer_loading=false. All tools cannot be deferred.")
	}
	if len(ts.deferred) > MaxDeferredTools {
		return nil, invalid("tools: %d tools have defer_loading=true; at most %d can be deferred", len(ts.deferred), MaxDeferredTools)
	}
	// Deferred tools need no server search tool: the client may search on its side
	// and load them with tool_reference blocks, as the API allows. The index serves
	// only the server search tools.
	if len(ts.deferred) > 0 && len(ts.searches) > 0 {
		ix, err := newToolIndex(tools)
		if err != nil {
			return nil, invalid("tools: %v", err)
		}
		ts.catalog = ix
	}
	return ts, nil
}

// checkBlock checks the tool search parts of one content block.
func (pr *prepared) checkBlock(b Block, where string) *APIError {
	switch b.Type {
	case "tool_result":
		if strings.HasPrefix(b.ToolUseID, "srvtoolu_") {
			return invalid("%s: a tool_result cannot answer the server tool use %q; its tool_search_tool_result is already in the assistant message, so remove this tool_result", where, b.ToolUseID)
		}
		inner, err := b.ResultBlocks()
		if err != nil {
			return invalid("%s.content: %v", where, err)
		}
		for k, ib := range inner {
			if ib.Type == "tool_reference" {
				if err := pr.checkReference(ib.ToolName, fmt.Sprintf("%s.content.%d", where, k)); err != nil {
					return err
				}
			}
		}
	case "tool_search_tool_result":
		refs, _, _ := searchResultRefs(b.Content)
		for _, name := range refs {
			if err := pr.checkReference(name, where+".content"); err != nil {
				return err
			}
		}
	case "tool_reference":
		return pr.checkReference(b.ToolName, where)
	}
	return nil
}

func (ts *toolSet) checkReference(name, where string) *APIError {
	if _, ok := ts.names[name]; !ok {
		return invalid("Tool reference '%s' not found in available tools", name)
	}
	return nil
}

// searchResultRefs reads the tool names of a tool_search_tool_result's content, or its
// error code.
func searchResultRefs(content json.RawMessage) (names []string, errCode string, ok bool) {
	var c struct {
		Type           string `json:"type"`
		ErrorCode      string `json:"error_code"`
		ToolReferences []struct {
			ToolName string `json:"tool_name"`
		} `json:"tool_references"`
	}
	if json.Unmarshal(content, &c) != nil {
		return nil, "", false
	}
	for _, r := range c.ToolReferences {
		names = append(names, r.ToolName)
	}
	return names, c.ErrorCode, true
}

// checkInputSchema says what is wrong with a custom tool's input_schema, or "". The
// schema is part of a validated request.
func checkInputSchema(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return "a custom tool needs an input_schema, a JSON Schema object such as {\"type\": \"object\", \"properties\": {}}"
	}
	if b[0] != '{' {
		return "must be a JSON Schema object"
	}
	problem := ""
	jsonscan.Members(b, func(key string, v []byte) bool {
		if key == "type" && string(v) != `"object"` {
			problem = fmt.Sprintf("the root type must be \"object\", got %s", v)
		}
		return problem == ""
	})
	return problem
}

// validToolName reports whether name matches ^[a-zA-Z0-9_-]{1,128}$.
func validToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !toolNameByte(name[i]) {
			return false
		}
	}
	return true
}

// toolNameByte reports a byte the API takes in a tool name: [a-zA-Z0-9_-].
func toolNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// cloneTools copies tools and their bytes: when the array they were decoded from is
// known, one copy of it, which the copied tools point into.
func cloneTools(tools []Tool, raw []byte) ([]Tool, []byte) {
	if raw != nil {
		raw = bytes.Clone(raw)
		var out []Tool
		err := eachElement(raw, "tools", "a list of tools", func(where string, e []byte) error {
			var t Tool
			err := t.decode(where, e)
			out = append(out, t)
			return err
		})
		if err == nil && len(out) == len(tools) {
			return out, raw
		}
	}
	out := make([]Tool, len(tools))
	for i, t := range tools {
		if err := out[i].decode("tool", bytes.Clone(t.Raw)); err != nil || len(t.Raw) == 0 {
			out[i] = t // made in Go, not decoded: nothing to detach
		}
	}
	return out, nil
}

// toolIndex is the search index over a request's deferred tools.
type toolIndex struct {
	index   *search.Index
	vectors toolVectors // the deferred tools' embeddings, when the Proxy has an endpoint
}

// newToolIndex indexes the deferred tools, in MCP's shape for the catalog.
func newToolIndex(tools []Tool) (*toolIndex, error) {
	var raws []json.RawMessage
	for _, t := range tools {
		if !t.DeferLoading || t.SearchKind() != "" {
			continue
		}
		raws = append(raws, mcpDefinition(t.Name, t.Description, t.InputSchema))
	}
	snap, problems := catalog.Build([]catalog.Source{{Server: "tools", Tools: raws, Origin: "request"}})
	if len(problems) > 0 {
		return nil, problems[0]
	}
	return &toolIndex{index: search.NewIndex(snap)}, nil
}

// toolsKey identifies a tools list by its bytes: two 64-bit maphashes with different
// seeds, which is collision-proof in practice and an order of magnitude faster than a
// cryptographic hash over a megabyte of definitions.
func toolsKey(tools []Tool) [2]uint64 {
	var h1, h2 maphash.Hash
	h1.SetSeed(keySeeds[0])
	h2.SetSeed(keySeeds[1])
	for _, t := range tools {
		h1.Write(t.Raw)
		h1.WriteByte(0)
		h2.Write(t.Raw)
		h2.WriteByte(0)
	}
	return [2]uint64{h1.Sum64(), h2.Sum64()}
}

var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// toolSetCache keeps the toolSets of recent tools lists within a budget of bytes (see
// Proxy.ToolCacheBytes), the oldest evicted first. The budget is of bytes, not of lists:
// a list may be a few kilobytes or, at 10,000 deferred tools, hundreds of megabytes once
// indexed, so any count would be either useless or a way for a client that sends
// distinct large lists to take all the memory there is.
type toolSetCache struct {
	mu      sync.Mutex
	entries map[[2]uint64]*toolSet
	order   [][2]uint64
	bytes   int64 // the sum of the entries' sizes
}

// DefaultToolCacheBytes is the default budget of the tools lists the proxy keeps
// validated and indexed: room for the largest list the API allows (10,000 deferred tools
// of a few kilobytes each) or for dozens of ordinary ones (Claude Code's few hundred
// tools are a few megabytes indexed).
const DefaultToolCacheBytes = 256 << 20

func (p *Proxy) toolCacheBytes() int64 {
	if p.ToolCacheBytes > 0 {
		return p.ToolCacheBytes
	}
	return DefaultToolCacheBytes
}

// size estimates the bytes a toolSet keeps alive: its copy of the tools' bytes, each
// tool's decoded fields and map entries, and, when it has one, the search index, whose
// terms, postings and n-grams take about six times the text indexed plus about 1.5 KB a
// tool. The factors are measured (runtime.MemStats after a GC, over lists of 1,000 and
// 10,000 tools with descriptions of 200 to 2,500 bytes: the index and the rest kept 6 to
// 11 times the list's bytes) and rounded up, so that the estimate is above what is kept.
func (ts *toolSet) size() int64 {
	n := int64(len(ts.raw))
	if ts.raw == nil {
		for _, t := range ts.tools {
			n += int64(len(t.Raw))
		}
	}
	size := n + 512*int64(len(ts.tools))
	if ts.catalog != nil {
		size += 6*n + 1536*int64(len(ts.deferred))
	}
	return size
}

func (c *toolSetCache) get(key [2]uint64) *toolSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[key]
}

// match returns the toolSet whose tools array, as received, starts b.
func (c *toolSetCache) match(b []byte) *toolSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range c.order {
		if ts := c.entries[key]; len(ts.raw) > 0 && bytes.HasPrefix(b, ts.raw) {
			return ts
		}
	}
	return nil
}

// put keeps ts, evicting the oldest entries until the sizes fit budget. A toolSet larger
// than the whole budget is not kept: its request is answered, and the next request with
// the same tools validates and indexes them again.
func (c *toolSetCache) put(key [2]uint64, ts *toolSet, budget int64) {
	size := ts.size()
	if size > budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[2]uint64]*toolSet{}
	}
	if _, ok := c.entries[key]; ok {
		return
	}
	for len(c.order) > 0 && c.bytes+size > budget {
		c.bytes -= c.entries[c.order[0]].size()
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	c.entries[key] = ts
	c.order = append(c.order, key)
	c.bytes += size
}

// retained is the sum of the sizes of the toolSets kept.
func (c *toolSetCache) retained() (bytes int64, lists int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, len(c.entries)
}
