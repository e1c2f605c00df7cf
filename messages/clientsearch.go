package messages

import (
	"encoding/json"
	"hash/maphash"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/search"
)

// Claude Code (2.1.3xx) keeps its MCP tools out of the prompt and finds them with its
// own client-side search tool, ToolSearch: the model calls it with a few words, Claude
// Code ranks the deferred tools by keyword points (no stemming, its own built-in tools
// competing for the slots), answers with tool_reference blocks, and from then on sends
// the tools found and runs them when called. toolshed ranks far better on the same
// queries, so the Proxy answers that search with its own ranking, without taking it
// away from Claude Code: when the model calls ToolSearch with words, the call is passed
// on as Claude Code's exact selection, query "select:A,B,C" naming toolshed's best
// tools, and Claude Code loads exactly those with its own machinery (marks them found,
// sends their definitions on the next turns, runs them). The model keeps seeing its own
// words: the next requests carry the call as the model made it (see clientState.restore).
//
// Since 2.1.332 Claude Code names its deferred tools in a system message instead of
// sending their definitions, so the Proxy ranks with the definitions of ClientTools (a
// catalog of the same MCP servers), with those a request does carry (deferred tools with
// defer_loading, as earlier versions sent them all), and with those the client's earlier
// requests carried (learnedDefs). When more than maxUnknownShare of the deferred MCP tools
// are known by name alone, toolshed's ranking would know less than Claude Code's, so the
// search is left to Claude Code (see clientCandidates).

// clientSearchName is the name of Claude Code's search tool.
const clientSearchName = "ToolSearch"

// placeholderName is the deferred tool Claude Code sends to keep deferred loading on;
// it is never a tool to find.
const placeholderName = "DeferredToolPlaceholder"

// builtinServer is the server the client's own deferred tools (Claude Code's WebFetch,
// CronCreate, ...) are indexed under: by their names alone, the only thing of them a
// request shows.
const builtinServer = "builtin"

// isClientSearch reports whether t is Claude Code's ToolSearch: a custom tool of that
// name, not deferred, whose input has a "query".
func isClientSearch(t *Tool) bool {
	if t.Name != clientSearchName || !t.IsCustom() || t.DeferLoading {
		return false
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(t.InputSchema, &s)
	_, ok := s.Properties["query"]
	return ok
}

// ccName is the name Claude Code gives tool of server: mcp__SERVER__TOOL, each part
// with every character outside [A-Za-z0-9_-] replaced by '_'.
func ccName(server, tool string) string {
	return "mcp__" + ccPart(server) + "__" + ccPart(tool)
}

func ccPart(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !toolNameByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// shortenedRow is a row of Claude Code's shortened deferred-tools list: all the tools of
// one server, "mcp__claude_ai_Slack__* (42)".
var shortenedRow = regexp.MustCompile(`^(mcp__[A-Za-z0-9_-]+?__)\* \(\d+\)$`)

// announced returns the deferred tools Claude Code's system messages name, in the
// conversation's order: each "deferred tools are (now) available via ToolSearch" list
// adds names (or, shortened, whole servers as name prefixes), each "no longer
// available" list takes them away.
func announced(msgs []Message) (names map[string]bool, prefixes []string) {
	names = map[string]bool{}
	for _, m := range msgs {
		if m.Role == "assistant" {
			continue
		}
		for _, b := range m.Content {
			if b.Type != "text" || !strings.Contains(b.Text, "available") {
				continue
			}
			for part := range strings.SplitSeq(b.Text, "\n\n") {
				add := strings.Contains(part, "deferred tools are") && strings.Contains(part, "available via "+clientSearchName)
				remove := strings.Contains(part, "no longer available")
				if !add && !remove {
					continue
				}
				for line := range strings.SplitSeq(part, "\n") {
					line = strings.TrimSpace(line)
					switch row := shortenedRow.FindStringSubmatch(line); {
					case row != nil && add:
						prefixes = append(prefixes, row[1])
					case !validToolName(line):
					case add:
						names[line] = true
					default:
						delete(names, line)
					}
				}
			}
		}
	}
	return names, prefixes
}

// clientIndex is the search index of one client's deferred tools, with the name Claude
// Code gives each.
type clientIndex struct {
	index  *search.Index
	byName map[*catalog.Tool]string // the client's name of each indexed tool
	size   int64                    // the memory it keeps, estimated
	// vectors are the tools' embeddings, when the Proxy has an endpoint: its answers
	// fuse words and vectors as tool_search_tool_bm25 does. texts are what is embedded,
	// "" for a tool known by its name alone (Claude Code's own, or an MCP tool with no
	// definition): its vector would say little, come near many queries, and take
	// their slots, so it is found by words alone.
	vectors toolVectors
	texts   []string
}

// named returns the tools of allow (every tool when nil) whose client name has word in
// it, ignoring case.
func (ix *clientIndex) named(allow *catalog.Set, word string) *catalog.Set {
	snap := ix.index.Snapshot()
	out := catalog.NewSet(snap)
	for _, t := range snap.Tools() {
		if (allow == nil || allow.Has(t.Index)) && strings.Contains(strings.ToLower(ix.byName[t]), word) {
			out.Add(t.Index)
		}
	}
	return out
}

// clientIndexes keeps the indexes of recent deferred-tool lists: a conversation sends
// the same list every turn. It keeps at most maxClientIndexes, and within the Proxy's
// ToolCacheBytes, estimated as toolSet.size does; an index larger than that is built
// for each search and never kept.
type clientIndexes struct {
	mu      sync.Mutex
	entries map[uint64]*clientIndex
	order   []uint64
	bytes   int64
}

const maxClientIndexes = 16

// clientCandidates gathers the request's deferred tools with what is known of each: the
// definitions of ClientTools, else those the request carries, else those the client's
// earlier requests carried (see learnedDefs); Claude Code's own tools,
// and MCP tools known nowhere, by name. A server may offer a tool to one client and not
// another (the reference "everything" server lists get-roots-list only to clients with
// roots), so a few MCP tools known by name alone are ranked so; when more than
// maxUnknownShare of them are, toolshed would know less than Claude Code, and
// clientCandidates returns no sources. unknown lists the MCP tools known by name alone.
func (p *Proxy) clientCandidates(pr *prepared) (sources []catalog.Source, clientName map[string]string, nameOnly map[string]bool, key uint64, unknown []string) {
	names, prefixes := announced(pr.req.Messages)
	for name := range pr.deferred {
		if name != placeholderName {
			names[name] = true
		}
	}
	known := p.clientTools()
	for _, prefix := range prefixes {
		prefix = foldName(prefix)
		for folded, t := range known {
			if strings.HasPrefix(folded, prefix) {
				names[ccName(t.Server, t.Name)] = true
			}
		}
	}
	sorted := slices.Sorted(maps.Keys(names))
	var h maphash.Hash
	h.SetSeed(keySeeds[0])
	bySource := map[string]int{}
	clientName = map[string]string{} // by server and tool name, "\x00" between
	put := func(server, tool, name string, raw json.RawMessage) {
		clientName[server+"\x00"+tool] = name
		i, ok := bySource[server]
		if !ok {
			i = len(sources)
			bySource[server] = i
			sources = append(sources, catalog.Source{Server: server, Origin: "the client's deferred tools"})
		}
		sources[i].Tools = append(sources[i].Tools, raw)
		h.Write(raw)
		h.WriteByte(0)
	}
	mcp := 0 // the deferred MCP tools
	for _, name := range sorted {
		h.WriteString(name)
		if strings.HasPrefix(name, "mcp__") {
			mcp++
		}
		// The catalog's definition first: the same for every turn, so the index is
		// built once for the conversation, as the tools found start to come with it.
		if t, ok := known[foldName(name)]; ok {
			put(t.Server, t.Name, name, t.Raw)
			continue
		}
		server, tool := splitCCName(name)
		if t, ok := pr.deferred[name]; ok {
			put(server, tool, name, mcpDefinition(tool, t.Description, t.InputSchema))
			continue
		}
		if def, ok := p.client.learned.lookup(pr.req.client, name); ok {
			put(server, tool, name, def)
			continue
		}
		if strings.HasPrefix(name, "mcp__") {
			unknown = append(unknown, name)
		}
		if nameOnly == nil {
			nameOnly = map[string]bool{}
		}
		nameOnly[name] = true
		tn, _ := json.Marshal(tool)
		put(server, tool, name, json.RawMessage(`{"name":`+string(tn)+`,"inputSchema":{"type":"object"}}`))
	}
	if float64(len(unknown)) > maxUnknownShare*float64(mcp) {
		return nil, nil, nil, 0, unknown
	}
	return sources, clientName, nameOnly, h.Sum64(), unknown
}

// maxUnknownShare is the largest share of a client's deferred MCP tools that may be
// known by name alone for toolshed to rank them: past it, the search is left to the
// client, whose own search reads every description.
const maxUnknownShare = 0.1

// splitCCName splits mcp__SERVER__TOOL at the first "__" after the prefix; a name of
// another shape is the tool of no server.
func splitCCName(name string) (server, tool string) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return builtinServer, name
	}
	if s, t, ok := strings.Cut(rest, "__"); ok && s != "" && t != "" {
		return s, t
	}
	return builtinServer, name
}

// clientTools maps Claude Code's name of each ClientTools tool, folded (see foldName),
// to it.
func (p *Proxy) clientTools() map[string]*catalog.Tool {
	p.client.once.Do(func() {
		p.client.known = map[string]*catalog.Tool{}
		if p.ClientTools == nil {
			return
		}
		for _, t := range p.ClientTools.Tools() {
			if k := foldName(ccName(t.Server, t.Name)); p.client.known[k] == nil {
				p.client.known[k] = t
			}
		}
	})
	return p.client.known
}

// foldName folds a client's tool name for matching with a catalog's: a catalog's
// server names have '-' where the client's have '_' ("Ant Design Components" is
// Ant-Design-Components to toolshed, Ant_Design_Components to Claude Code).
func foldName(name string) string { return strings.ReplaceAll(name, "-", "_") }

// clientIndex returns the index of the request's deferred tools, or nil; and the
// deferred MCP tools whose definitions are unknown.
func (p *Proxy) clientIndex(pr *prepared) (*clientIndex, []string) {
	sources, clientName, nameOnly, key, unknown := p.clientCandidates(pr)
	if len(sources) == 0 {
		return nil, unknown
	}
	c := &p.client.indexes
	c.mu.Lock()
	ix := c.entries[key]
	c.mu.Unlock()
	if ix != nil {
		return ix, unknown
	}
	snap, _ := catalog.Build(sources)
	ix = &clientIndex{index: search.NewIndex(snap), byName: make(map[*catalog.Tool]string, snap.Len())}
	for _, src := range sources {
		for _, raw := range src.Tools {
			ix.size += 7 * int64(len(raw)) // the definitions and the index on them (see toolSet.size)
		}
	}
	ix.size += 2048 * int64(snap.Len())
	if p.Embed != nil { // only what is embedded needs its text
		ix.texts = embed.ToolTexts(snap)
	}
	for i, t := range snap.Tools() {
		name, ok := clientName[t.Server+"\x00"+t.Name]
		if !ok {
			name = ccName(t.Server, t.Name)
		}
		ix.byName[t] = name
		if ix.texts == nil {
			continue
		}
		if nameOnly[name] {
			ix.texts[i] = ""
		}
		ix.size += int64(len(ix.texts[i]))
	}
	budget := p.toolCacheBytes()
	if ix.size > budget {
		return ix, unknown
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[uint64]*clientIndex{}
	}
	if _, ok := c.entries[key]; !ok {
		for len(c.order) > 0 && (len(c.order) >= maxClientIndexes || c.bytes+ix.size > budget) {
			c.bytes -= c.entries[c.order[0]].size
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
		c.entries[key] = ix
		c.order = append(c.order, key)
		c.bytes += ix.size
	}
	return ix, unknown
}

// clientSearchInput is toolshed's answer to the model's call of Claude Code's
// ToolSearch: the input naming the tools to load, and true; or false to leave the
// call as the model made it (a "select:", no deferred tools, a tool toolshed cannot
// rank, no match).
func (t *turn) clientSearchInput(input json.RawMessage) (json.RawMessage, bool) {
	if t.p.NoClientSearch || t.pr.clientSearch == nil {
		return nil, false
	}
	var in struct {
		Query      *string          `json:"query"`
		MaxResults *json.RawMessage `json:"max_results"`
	}
	if json.Unmarshal(orEmptyObject(input), &in) != nil || in.Query == nil {
		return nil, false
	}
	query := strings.TrimSpace(*in.Query)
	if query == "" || strings.HasPrefix(query, "select:") {
		return nil, false
	}
	// Claude Code's search takes any length (it reads the first 32 words); toolshed's
	// reads the words that fit its limit, as eval does.
	query = search.Shorten(query, search.MaxQueryLen)
	limit := search.DefaultLimit
	if in.MaxResults != nil {
		var n float64
		if json.Unmarshal(*in.MaxResults, &n) != nil || n != float64(int(n)) || n < 1 {
			return nil, false // Claude Code says what is wrong with it
		}
		limit = min(int(n), 50)
	}
	ix, unknown := t.p.clientIndex(t.pr)
	if len(unknown) > 0 {
		t.p.client.warnOnce(t.p.logger(), unknown, ix != nil)
	}
	if ix == nil {
		return nil, false
	}
	// "+word" (Claude Code's syntax) keeps the tools whose name has word in it.
	var words []string
	var allow *catalog.Set
	for w := range strings.FieldsSeq(query) {
		req, ok := strings.CutPrefix(w, "+")
		if !ok || req == "" {
			words = append(words, w)
			continue
		}
		words = append(words, req)
		allow = ix.named(allow, strings.ToLower(req))
	}
	start := time.Now()
	found, err := t.p.fused(t.ctx, t.p.Learn.Index(ix.index), &ix.vectors, ix.texts, strings.Join(words, " "), search.Options{Limit: limit, Allow: allow})
	names := make([]string, len(found))
	for i, r := range found {
		names[i] = ix.byName[r.Tool]
	}
	if err == nil {
		t.logSearch("bm25", *in.Query, names, "", time.Since(start))
	}
	if err != nil || len(found) == 0 {
		return nil, false
	}
	q, _ := json.Marshal("select:" + strings.Join(names, ","))
	out := append([]byte(`{"query":`), q...)
	if in.MaxResults != nil {
		out = append(append(out, `,"max_results":`...), *in.MaxResults...)
	}
	return append(out, '}'), true
}

// answerClientSearch returns the model's call b of the client's search with
// toolshed's answer as its input (see clientSearchInput), remembering the model's own.
func (t *turn) answerClientSearch(b Block) Block {
	in, ok := t.clientSearchInput(b.Input)
	if !ok {
		return b
	}
	t.p.client.remember(t.pr.req.client, b.ID, orEmptyObject(b.Input))
	b.Input = in
	if len(b.Raw) > 0 {
		b.Raw = withMember(b.Raw, "input", in)
	}
	return b
}
