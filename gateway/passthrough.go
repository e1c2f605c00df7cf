package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's server routes calls, pages tools/list, tracks sessions and annotates results
// for the protocol version of each client; toolshed keeps all of that. What it replaces
// is the encoding of what it forwards: a receiving middleware swaps the SDK's tools/list
// and tools/call results for results that write the upstream's own bytes (see
// rawjson.go), keeping the members the SDK set on the way (nextCursor, ttlMs,
// resultType, _meta.serverInfo).

// listedTools holds the bytes each tool of an MCP server is listed with, by name, next to
// the *mcp.Tool the SDK routes calls with.
type listedTools struct {
	mu       sync.RWMutex
	byName   map[string][]byte
	handlers map[string]mcp.ToolHandler // the handler of each, for the fast path (fastcall.go)
	// bindings caches the x-mcp-header bindings of each tool's input schema, read at
	// its first modern call rather than decoded from the schema at every one (see
	// headerBindingsOf); an entry holds for the listed bytes it was read from.
	bindings map[string]bindingsEntry
}

// bindingsEntry is the x-mcp-header bindings read from a tool's listed bytes, raw.
type bindingsEntry struct {
	raw  *byte // the first byte of the listed definition they were read from
	list []headerBinding
}

// add registers a tool with s, listed as raw (see listedDefinition).
func (l *listedTools) add(s *mcp.Server, def *mcp.Tool, raw []byte, h mcp.ToolHandler) error {
	if err := addTool(s, def, h); err != nil {
		return err
	}
	l.mu.Lock()
	if l.byName == nil {
		l.byName, l.handlers = map[string][]byte{}, map[string]mcp.ToolHandler{}
	}
	l.byName[def.Name] = raw
	l.handlers[def.Name] = h
	l.mu.Unlock()
	return nil
}

// remove unregisters tools from s.
func (l *listedTools) remove(s *mcp.Server, names ...string) {
	s.RemoveTools(names...)
	l.mu.Lock()
	for _, n := range names {
		delete(l.byName, n)
		delete(l.handlers, n)
		delete(l.bindings, n)
	}
	l.mu.Unlock()
}

// has reports whether a tool is listed under name.
func (l *listedTools) has(name string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.byName[name]
	return ok
}

// handler returns the handler of the tool listed under name, nil when none is.
func (l *listedTools) handler(name string) mcp.ToolHandler {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.handlers[name]
}

// headerBindingsOf returns the arguments of the tool listed under name that its input
// schema marks with x-mcp-header, and false when no tool is listed under name. The
// schema is decoded once per listed definition: a modern POST checks these bindings
// against its Mcp-Param-* headers at every call (see headerMismatch).
func (l *listedTools) headerBindingsOf(name string) ([]headerBinding, bool) {
	l.mu.RLock()
	raw := l.byName[name]
	e, cached := l.bindings[name]
	l.mu.RUnlock()
	if len(raw) == 0 {
		return nil, false
	}
	if cached && e.raw == &raw[0] {
		return e.list, true
	}
	var list []headerBinding
	if schema := memberValue(raw, "inputSchema"); schema != nil {
		list = headerBindings(schema)
	}
	l.mu.Lock()
	// Stored only while the tool is still listed with the bytes read: a definition
	// replaced meanwhile is read again at its next call.
	if cur := l.byName[name]; len(cur) > 0 && &cur[0] == &raw[0] {
		if l.bindings == nil {
			l.bindings = map[string]bindingsEntry{}
		}
		l.bindings[name] = bindingsEntry{raw: &raw[0], list: list}
	}
	l.mu.Unlock()
	return list, true
}

// middleware answers tools/list with the listed bytes and tools/call with the
// upstream's result bytes (see forwardResult).
func (l *listedTools) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				return l.render(lr), nil
			}
			return res, err
		case "tools/call":
			slot := &forwardSlot{}
			res, err := next(context.WithValue(ctx, forwardKey{}, slot), method, req)
			if slot.refusal != nil && err == nil && callerLacks(callerOf(req), slot.refusal) {
				return nil, slot.refusal
			}
			if cr, ok := res.(*mcp.CallToolResult); ok && err == nil && cr != nil && cr == slot.placeholder {
				return &forwardedResult{CallToolResult: cr, raw: slot.raw}, nil
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// render turns the SDK's page of tools into one that writes each tool's listed bytes.
func (l *listedTools) render(lr *mcp.ListToolsResult) *rawToolsPage {
	page := &rawToolsPage{ListToolsResult: lr, tools: make([]json.RawMessage, len(lr.Tools))}
	l.mu.RLock()
	for i, t := range lr.Tools {
		// A tool replaced while this page was being read is listed as it is now: the
		// client is told that the list changed, and reads it again.
		if raw, ok := l.byName[t.Name]; ok {
			page.tools[i] = raw
		}
	}
	l.mu.RUnlock()
	for i, t := range lr.Tools {
		if page.tools[i] == nil {
			// Removed while this page was being read: the name and input schema the
			// SDK still has (the client is told that the list changed).
			page.tools[i], _ = marshal(t)
		}
	}
	return page
}

// rawToolsPage is a tools/list result whose tools are written as listed. Embedding the
// SDK's result keeps what the SDK sets on it after the middleware (result type, _meta).
type rawToolsPage struct {
	*mcp.ListToolsResult
	tools []json.RawMessage
}

func (p *rawToolsPage) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		*mcp.ListToolsResult
		Tools []json.RawMessage `json:"tools"`
	}{p.ListToolsResult, p.tools})
}

// forwardSlot carries an upstream's raw tools/call result from the tool handler, through
// the SDK, to the middleware: the handler returns a placeholder result to the SDK and
// puts the bytes here.
type forwardSlot struct {
	placeholder *mcp.CallToolResult
	raw         json.RawMessage
	// refusal is the upstream's MissingRequiredClientCapability error, when it
	// refused the call for want of a capability (see missingCapability).
	refusal *jsonrpc.Error
}

type forwardKey struct{}

// forwardResult returns the result to hand the SDK for an upstream's raw tools/call
// result: a placeholder that the middleware replaces by raw, or, where no middleware
// waits for it, raw decoded by the SDK.
func forwardResult(ctx context.Context, raw json.RawMessage) *mcp.CallToolResult {
	slot, _ := ctx.Value(forwardKey{}).(*forwardSlot)
	if slot == nil {
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return errorResult(ToolError, "the server's result could not be read: %v", err)
		}
		return &res
	}
	// Non-nil content, so that the SDK does not replace the placeholder by a copy.
	slot.placeholder = &mcp.CallToolResult{Content: []mcp.Content{}}
	slot.raw = raw
	return slot.placeholder
}

// forwardedResult is a tools/call result written as the upstream's bytes. The SDK
// annotates the placeholder for the client's protocol version (resultType, and
// _meta.serverInfo for per-request clients); resultType is added where the upstream's
// result lacks it, and toolshed's serverInfo replaces the upstream's.
type forwardedResult struct {
	*mcp.CallToolResult
	raw json.RawMessage
}

func (f *forwardedResult) MarshalJSON() ([]byte, error) {
	env, err := marshal(f.CallToolResult)
	if err != nil {
		return nil, err
	}
	out := []byte(f.raw)
	if rt := memberValue(env, "resultType"); rt != nil && memberValue(out, "resultType") == nil {
		out = setMembers(out, member{Key: "resultType", Value: rt})
	}
	if meta := memberValue(env, "_meta"); meta != nil {
		own := memberValue(out, "_meta")
		var add []member
		memberSpans(meta, func(key string, start, end int) {
			// The protocol's own keys (serverInfo) are toolshed's: the client's server
			// is toolshed, not the upstream whose result this is.
			if own == nil || memberValue(own, key) == nil || strings.HasPrefix(key, envelopePrefix) {
				add = append(add, member{Key: key, Value: meta[start:end]})
			}
		})
		if len(add) > 0 {
			out = withMeta(out, add...)
		}
	}
	return out, nil
}

// resultIsError reports whether a raw tools/call result has "isError": true.
func resultIsError(raw json.RawMessage) bool {
	return string(memberValue(raw, "isError")) == "true"
}
