package messages

import (
	"encoding/json"
	"strings"
	"sync"
)

// A client's own requests can carry the definitions of the MCP tools it defers: Claude
// Code with ENABLE_TOOL_SEARCH=auto first counts every tool in full with count_tokens,
// and sends the tools its search found with every later request. The Proxy keeps those
// definitions, for that client alone (by its key: no client's definitions rank another
// client's search), so that with no --config or --catalog its search is still
// toolshed's once the client has shown its tools. Bounded in bytes and in clients.
const (
	// maxLearnedBytes bounds the definitions kept, all clients together.
	maxLearnedBytes = 64 << 20
	// maxLearnedTools bounds the definitions kept for one client.
	maxLearnedTools = MaxDeferredTools
)

// learnedDefs are the MCP tool definitions clients' requests carried.
type learnedDefs struct {
	mu      sync.Mutex
	clients map[[16]byte]*clientDefs
	order   [][16]byte // oldest first, for forgetting
	bytes   int
	limit   int // the bound of bytes; zero means maxLearnedBytes
}

// clientDefs are one client's: each tool's definition in MCP's shape, by the client's
// name, and the tools lists already read.
type clientDefs struct {
	defs  map[string]json.RawMessage
	seen  map[[2]uint64]bool // by toolsKey: no reference keeps a list alive
	bytes int
}

// learn keeps the MCP tool definitions of ts for client.
func (l *learnedDefs) learn(client [16]byte, ts *toolSet) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clients[client]
	if c != nil && c.seen[ts.key] {
		return
	}
	if l.clients == nil {
		l.clients = map[[16]byte]*clientDefs{}
	}
	if c == nil {
		c = &clientDefs{defs: map[string]json.RawMessage{}, seen: map[[2]uint64]bool{}}
		l.clients[client] = c
		l.order = append(l.order, client)
	}
	if len(c.seen) >= maxClientIndexes {
		clear(c.seen) // only a shortcut: reading a list again changes nothing
	}
	c.seen[ts.key] = true
	for i := range ts.tools {
		t := &ts.tools[i]
		if !strings.HasPrefix(t.Name, "mcp__") || !t.IsCustom() || len(t.InputSchema) == 0 {
			continue
		}
		if _, ok := c.defs[t.Name]; !ok && len(c.defs) >= maxLearnedTools {
			continue
		}
		_, tool := splitCCName(t.Name)
		def := mcpDefinition(tool, t.Description, t.InputSchema)
		l.bytes += len(def) - len(c.defs[t.Name])
		c.bytes += len(def) - len(c.defs[t.Name])
		c.defs[t.Name] = def
	}
	// Forget the clients shown longest ago, never the one just read.
	limit := l.limit
	if limit == 0 {
		limit = maxLearnedBytes
	}
	for l.bytes > limit && len(l.order) > 1 && l.order[0] != client {
		old := l.order[0]
		l.bytes -= l.clients[old].bytes
		delete(l.clients, old)
		l.order = l.order[1:]
	}
}

// lookup returns client's definition of the tool it calls name.
func (l *learnedDefs) lookup(client [16]byte, name string) (json.RawMessage, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clients[client]
	if c == nil {
		return nil, false
	}
	def, ok := c.defs[name]
	return def, ok
}

// mcpDefinition is a tool definition in MCP's shape.
func mcpDefinition(name, description string, schema json.RawMessage) json.RawMessage {
	n, _ := json.Marshal(name)
	d, _ := json.Marshal(description)
	return json.RawMessage(`{"name":` + string(n) + `,"description":` + string(d) + `,"inputSchema":` + string(schema) + `}`)
}
