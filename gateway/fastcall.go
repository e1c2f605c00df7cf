package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/jsonscan"
)

// A client's tools/call is the request a gateway serves most, and the SDK's server
// made it cost more than toolshed's own work on it: its jsonrpc2 connection handed
// each request through two goroutines it started for it (one of which grew its stack
// through the middlewares every time), and decoded the params twice (_meta, then the
// params), each time with a decoder that allocates a 32 KiB buffer. Both fronts'
// connections (stdioConn, httpConn) therefore serve an ordinary tools/call
// themselves, with the very handler and the receiving middlewares' effects the SDK
// path has: the tool's handler (direct or bridged), the raw result (forwardResult),
// the request's stream (relatedStream), the session's join and its upstreams'
// settling (sessionMiddleware); calls.run does the rest as before (hooks, rate
// limits, validation, the activity and search logs, progress, cancellation, relays).
//
// Anything out of the ordinary goes to the SDK as before: a session not initialized
// and joined yet (a stateless POST's session, which never joins, is served as one
// that has), upstreams not settled or up but not in the catalog yet, a protocol
// version with multi round-trip requests or per-request metadata, params with
// members other than name, arguments and a _meta holding only a progress token, a
// tool not listed (hidden, restarting, unknown), a gateway with approval rules (the
// SDK's middleware asks the user and calls again). fastCallsOff turns the fast path off (tests compare both paths).

// fastCallsOff, set by tests, sends every tools/call to the SDK;
// fastCallsServed counts the calls the fast path served (for the tests that check it
// was taken).
var (
	fastCallsOff    atomic.Bool
	fastCallsServed atomic.Int64
)

// fastCall is a tools/call the connection serves itself; run serves it.
type fastCall struct {
	ps      *profileServer
	ss      *mcp.ServerSession
	id      jsonrpc.ID
	handler mcp.ToolHandler
	params  *mcp.CallToolParamsRaw
	extra   *mcp.RequestExtra
}

// fastCallOf returns the fast path of msg on session ss of profile, or false when the
// SDK is to serve it.
func (g *Gateway) fastCallOf(profile string, ss *mcp.ServerSession, msg *jsonrpc.Request) (*fastCall, bool) {
	if fastCallsOff.Load() || ss == nil || msg.Method != "tools/call" || !msg.IsCall() {
		return nil, false
	}
	if len(g.hooks.cfg.Approve) > 0 || g.hooks.cfg.ApproveDestructive {
		return nil, false
	}
	if p := ss.InitializeParams(); p == nil || sessionCaller(ss).modern || !g.clients.serving(ss) {
		return nil, false
	}
	params, ok := fastParams(msg.Params)
	if !ok {
		return nil, false
	}
	ps := g.profileServer(profile)
	h := ps.tools.handler(params.Name)
	ups := g.upstreamsFor("tools/call", params.Name)
	if now := time.Now(); h == nil || g.holding(ups, now, g.clients.patienceOf(ss), now) || unassembled(ups) {
		return nil, false
	}
	extra, _ := msg.Extra.(*mcp.RequestExtra)
	return &fastCall{ps: ps, ss: ss, id: msg.ID, handler: h, params: params, extra: extra}, true
}

// fastParams reads the params of an ordinary tools/call: a name, arguments that are an
// object (or none), and a _meta with only a progress token (or none). Anything else
// is false, for the SDK to read.
func fastParams(raw []byte) (*mcp.CallToolParamsRaw, bool) {
	if len(raw) == 0 || raw[jsonscan.SkipSpace(raw, 0)] != '{' {
		return nil, false
	}
	p := &mcp.CallToolParamsRaw{}
	ok, named := true, false
	var seen [3]bool // name, arguments, _meta: a member twice is left to the SDK
	once := func(i int) bool {
		if seen[i] {
			return false
		}
		seen[i] = true
		return true
	}
	jsonscan.Members(raw, func(key string, val []byte) bool {
		switch key {
		case "name":
			if named = once(0) && len(val) > 0 && val[0] == '"'; named {
				p.Name = jsonscan.Unquote(val)
			}
		case "arguments":
			if ok = once(1) && len(val) > 0 && val[0] == '{'; ok {
				p.Arguments = val
			}
		case "_meta":
			if ok = once(2) && len(val) > 0 && val[0] == '{'; !ok {
				return false
			}
			jsonscan.Members(val, func(key string, tok []byte) bool {
				if key != "progressToken" || len(tok) == 0 || p.Meta != nil {
					ok = false
					return false
				}
				var v any
				if tok[0] == '"' {
					v = jsonscan.Unquote(tok)
				} else if f, err := strconv.ParseFloat(string(tok), 64); err == nil {
					v = f
				} else {
					ok = false
					return false
				}
				p.Meta = mcp.Meta{"progressToken": v}
				return true
			})
		default:
			ok = false
		}
		return ok
	})
	return p, ok && named && p.Name != ""
}

// fastServer returns what serves fc and hands its response to write, on whichever
// goroutine runs it. The call's cancel function is in fast, by id, while it runs (for
// notifications/cancelled); its context ends with life (the connection's). mu guards
// fast: the caller holds it, and fastServer releases it.
func fastServer(mu *sync.Mutex, fast map[jsonrpc.ID]context.CancelFunc, life context.Context, fc *fastCall, write func(*jsonrpc.Response)) func() {
	ctx, cancel := context.WithCancel(life)
	fast[fc.id] = cancel
	mu.Unlock()
	return func() {
		resp := fc.run(ctx)
		mu.Lock()
		delete(fast, fc.id)
		mu.Unlock()
		cancel()
		write(resp)
	}
}

// run serves the call: the response to write, as the SDK would have written it.
func (fc *fastCall) run(ctx context.Context) *jsonrpc.Response {
	fastCallsServed.Add(1)
	// What relatedStream does: over Streamable HTTP, what the handler sends with ctx
	// goes to the request's stream.
	if fc.extra != nil {
		if s, ok := relatedStreams.Load(fc.extra); ok {
			ctx = context.WithValue(ctx, streamKey{}, s)
		}
	}
	req := &mcp.CallToolRequest{Session: fc.ss, Params: fc.params, Extra: fc.extra}
	// What listedTools.middleware does: the upstream's bytes, not the SDK's decoding.
	slot := &forwardSlot{}
	res, err := fc.handler(context.WithValue(ctx, forwardKey{}, slot), req)
	if err != nil {
		return &jsonrpc.Response{ID: fc.id, Error: wireError(err)}
	}
	var result mcp.Result = res
	switch {
	case res == nil:
		// As jsonrpc2 answers a handler that returns neither.
		return &jsonrpc.Response{ID: fc.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the tool returned no result"}}
	case res == slot.placeholder && res.Meta == nil:
		// The upstream's bytes as they are: the SDK annotates results only for
		// clients of the protocol versions the fast path leaves to it, so
		// forwardedResult would add nothing; compacted, as encoding/json compacts
		// what a Marshaler returns.
		var buf bytes.Buffer
		if err := json.Compact(&buf, slot.raw); err == nil {
			return &jsonrpc.Response{ID: fc.id, Result: buf.Bytes()}
		}
		result = &forwardedResult{CallToolResult: res, raw: slot.raw}
	case res == slot.placeholder:
		result = &forwardedResult{CallToolResult: res, raw: slot.raw}
	case res.Content == nil:
		// As the SDK's callTool: "content": [] rather than null.
		cp := *res
		cp.Content = []mcp.Content{}
		result = &cp
	}
	data, err := marshal(result)
	if err != nil {
		return &jsonrpc.Response{ID: fc.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error: %v", err)}}
	}
	return &jsonrpc.Response{ID: fc.id, Result: data}
}

// encodeResponse returns resp as jsonrpc.EncodeMessage writes it, without encoding
// again a result that is JSON already (compact, as run makes it).
func encodeResponse(resp *jsonrpc.Response) ([]byte, error) {
	if resp.Error != nil || !resp.ID.IsValid() || len(resp.Result) == 0 {
		return jsonrpc.EncodeMessage(resp)
	}
	b := make([]byte, 0, len(resp.Result)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	switch id := resp.ID.Raw().(type) {
	case int64:
		b = strconv.AppendInt(b, id, 10)
	default:
		data, err := marshal(id)
		if err != nil {
			return nil, err
		}
		b = append(b, data...)
	}
	b = append(b, `,"result":`...)
	b = append(b, resp.Result...)
	return append(b, '}'), nil
}

// wireError is the JSON-RPC error the SDK's connection writes for a handler's error.
func wireError(err error) *jsonrpc.Error {
	var we *jsonrpc.Error
	if errors.As(err, &we) && error(we) == err {
		return we
	}
	out := &jsonrpc.Error{Message: err.Error()}
	if we != nil {
		out.Code = we.Code
	}
	return out
}

// upstreamsFor is upstreamsOf for a request's method and, for tools/call, the name of
// the tool it calls.
func (g *Gateway) upstreamsFor(method, tool string) []*Upstream {
	if method == "tools/call" {
		if server, _, ok := strings.Cut(tool, catalog.Separator); ok {
			if u := g.byName[server]; u != nil {
				return []*Upstream{u}
			}
		}
	}
	return g.upstreams
}
