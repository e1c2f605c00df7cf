package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

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
// that has), upstreams not settled or up but not in the catalog yet, params with
// members other than name, arguments and a _meta holding only a progress token, a
// tool not listed (hidden, restarting, unknown), a gateway with approval rules (the
// SDK's middleware asks the user and calls again). fastCallsOff turns the fast path off (tests compare both paths).
//
// A request of MCP 2026-07-28 (its envelope in _meta, see caller.go) takes the fast
// path too, on the session whose era it speaks (a modern stdio connection, a modern
// POST's own session): its _meta is decoded as the SDK decodes it, so that callerOf
// reads the same caller, capabilities and principal from it, its retry's
// inputResponses and requestState reach the call registry (MRTR), and its result is
// annotated as the SDK annotates a modern caller's (resultType, serverInfo; see
// modernResult). The connection has refused a bad envelope or headers before (see
// classifyRequest, modernPOST). Left to the SDK: an envelope that asks for a log level
// (the SDK keeps it in the request's context, where toolshed cannot put it), one
// whose capabilities or client info the SDK cannot decode (it refuses them), and a
// modern request on a session of the old era, or the other way round (the SDK judges
// MRTR by the session's version).

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
	modern  bool   // the request carries a modern envelope (on a modern session)
	caller  caller // a modern request's (see modernCaller)
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
	params, ok := fastParams(msg.Params)
	if !ok {
		return nil, false
	}
	modern := params.Meta[mcp.MetaKeyProtocolVersion] != nil
	if p := ss.InitializeParams(); p == nil || sessionCaller(ss).modern != modern || !g.clients.serving(ss) {
		return nil, false
	}
	var who caller
	if modern {
		if who, ok = modernCaller(ss, params); !ok {
			return nil, false
		}
	}
	ps := g.profileServer(profile)
	h := ps.tools.handler(params.Name)
	ups := g.upstreamsFor("tools/call", params.Name)
	if now := time.Now(); h == nil || g.holding(ups, now, g.clients.patienceOf(ss), now) || unassembled(ups) {
		return nil, false
	}
	extra, _ := msg.Extra.(*mcp.RequestExtra)
	return &fastCall{ps: ps, ss: ss, id: msg.ID, handler: h, params: params, extra: extra, modern: modern, caller: who}, true
}

// fastParams reads the params of an ordinary tools/call: a name, arguments that are an
// object (or none), and a _meta with only a progress token (or none); or, for a
// request of MCP 2026-07-28, a _meta with its envelope (see fastMeta) and the retry's
// inputResponses and requestState. Anything else is false, for the SDK to read.
func fastParams(raw []byte) (*mcp.CallToolParamsRaw, bool) {
	if len(raw) == 0 || raw[jsonscan.SkipSpace(raw, 0)] != '{' {
		return nil, false
	}
	p := &mcp.CallToolParamsRaw{}
	ok, named := true, false
	var responses []byte
	var seen [5]bool // name, arguments, _meta, inputResponses, requestState: a member twice is left to the SDK
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
			if ok = once(2) && len(val) > 0 && val[0] == '{'; ok {
				p.Meta, ok = fastMeta(val)
			}
		case "inputResponses":
			if ok = once(3) && len(val) > 0 && val[0] == '{'; ok {
				responses = val
			}
		case "requestState":
			if ok = once(4) && len(val) > 0 && val[0] == '"'; ok {
				p.RequestState = jsonscan.Unquote(val)
			}
		default:
			ok = false
		}
		return ok
	})
	if !ok || !named || p.Name == "" {
		return nil, false
	}
	if (seen[3] || seen[4]) && p.Meta[mcp.MetaKeyProtocolVersion] == nil {
		return nil, false // a retry of a client of the old era: the SDK's, as before
	}
	if responses != nil && json.Unmarshal(responses, &p.InputResponses) != nil {
		return nil, false // the SDK refuses it
	}
	return p, true
}

// fastMeta reads the _meta of a tools/call the fast path takes: a progress token alone,
// as the SDK decodes it, or a modern request's envelope with what else the client
// sends (a progress token, trace context), decoded as the SDK decodes params' _meta.
// A key twice, an envelope of a version of the old era, and one that sets a
// log level are false, for the SDK to read.
//
// The envelope's client capabilities and client info are kept as their JSON
// (json.RawMessage) rather than decoded into maps: what reads them (modernCaller, the
// SDK's ServerRequest accessors, declaresTasks) encodes a value before it decodes it
// into its own types, and the envelope never goes upstream (withoutEnvelope), so
// nothing sees a difference but the allocator.
func fastMeta(raw []byte) (mcp.Meta, bool) {
	type keyed struct {
		key string
		val []byte
	}
	var buf [8]keyed
	members := buf[:0]
	ok, modern := true, false
	var token []byte
	jsonscan.Members(raw, func(key string, val []byte) bool {
		for _, m := range members {
			if m.key == key {
				ok = false
				return false
			}
		}
		switch key {
		case mcp.MetaKeyLogLevel:
			ok = false
		case "progressToken":
			token = val
		case mcp.MetaKeyProtocolVersion:
			modern = len(val) > 0 && val[0] == '"' && modernVersion(versionOf(val))
			ok = modern
		}
		members = append(members, keyed{key, val})
		return ok
	})
	switch {
	case !ok:
		return nil, false
	case len(members) == 0:
		return mcp.Meta{}, true
	case modern:
		m := make(mcp.Meta, len(members))
		for _, kv := range members {
			switch {
			case isNull(kv.val):
				m[kv.key] = nil
			case kv.key == mcp.MetaKeyClientCapabilities || kv.key == mcp.MetaKeyClientInfo:
				m[kv.key] = json.RawMessage(kv.val)
			case kv.key == mcp.MetaKeyProtocolVersion:
				m[kv.key] = versionOf(kv.val) // a string (see above), as decoded
			default:
				var v any
				if json.Unmarshal(kv.val, &v) != nil {
					return nil, false
				}
				m[kv.key] = v
			}
		}
		return m, true
	case len(members) > 1 || len(token) == 0:
		return nil, false
	}
	var v any
	if token[0] == '"' {
		v = jsonscan.Unquote(token)
	} else if f, err := strconv.ParseFloat(string(token), 64); err == nil {
		v = f
	} else {
		return nil, false
	}
	return mcp.Meta{"progressToken": v}, true
}

// modernCaller returns the caller of a modern request with params on session ss, as
// callerOf reads it, and false when the SDK cannot decode the client's capabilities
// or identity in the envelope, as it must before it serves the request (it refuses
// it). The envelope is decoded once here, rather than at each callerOf of the call.
func modernCaller(ss *mcp.ServerSession, params *mcp.CallToolParamsRaw) (caller, bool) {
	version, _ := params.Meta[mcp.MetaKeyProtocolVersion].(string) // a string: see fastMeta
	info, named := params.Meta[mcp.MetaKeyClientInfo]
	rawCaps, cacheable := params.Meta[mcp.MetaKeyClientCapabilities].(json.RawMessage)
	rawInfo, isRaw := info.(json.RawMessage)
	cacheable = cacheable && (isRaw || !named)
	if cacheable {
		if c, ok := envelopeCallers.get(version, rawCaps, rawInfo, named); ok {
			if !named {
				c.info = ss.InitializeParams().ClientInfo
			}
			return c, true
		}
	}
	c := caller{version: version, modern: true}
	var caps envelopeCaps
	if !decodeMeta(params.Meta[mcp.MetaKeyClientCapabilities], &caps) {
		return caller{}, false
	}
	c.caps = caps.v1()
	if named {
		c.info = &mcp.Implementation{}
		if !decodeMeta(info, c.info) {
			return caller{}, false
		}
	}
	if cacheable {
		envelopeCallers.put(version, rawCaps, rawInfo, named, c)
	}
	if !named {
		c.info = ss.InitializeParams().ClientInfo // as ServerRequest.ClientInfo falls back
	}
	return c, true
}

// envelopeCallers holds the callers modernCaller decoded lately, by their envelope's
// JSON: a client sends the same envelope with every request, and decoding its
// capabilities and identity anew each time was a fifth of what a modern call cost the
// front beyond a stateless one. The capabilities and identity of a cached caller are
// shared by every call with that envelope, so nothing may modify them (nothing does:
// they are read, as the SDK's are).
var envelopeCallers = newCallerCache()

// callerCache is a fixed table of callers by a hash of their envelope: an entry is
// replaced by the next envelope with its hash, and a lookup compares the JSON itself,
// so a collision costs a decode, never a wrong caller.
type callerCache struct {
	seed  maphash.Seed
	slots [64]atomic.Pointer[cachedCaller]
}

type cachedCaller struct {
	version     string
	caps, info  string // the envelope's JSON, copied
	named       bool   // the envelope has a clientInfo
	capsDecoded *mcp.ClientCapabilities
	infoDecoded *mcp.Implementation
}

func newCallerCache() *callerCache { return &callerCache{seed: maphash.MakeSeed()} }

func (cc *callerCache) slot(version string, caps, info []byte) *atomic.Pointer[cachedCaller] {
	var h maphash.Hash
	h.SetSeed(cc.seed)
	h.WriteString(version)
	h.WriteByte(0)
	h.Write(caps)
	h.WriteByte(0)
	h.Write(info)
	return &cc.slots[h.Sum64()%uint64(len(cc.slots))]
}

// get returns the caller of an envelope seen before (its info to be filled in by the
// caller when the envelope names none).
func (cc *callerCache) get(version string, caps, info []byte, named bool) (caller, bool) {
	e := cc.slot(version, caps, info).Load()
	if e == nil || e.version != version || e.named != named || e.caps != string(caps) || e.info != string(info) {
		return caller{}, false
	}
	return caller{version: version, modern: true, caps: e.capsDecoded, info: e.infoDecoded}, true
}

// put remembers c, decoded from an envelope of version with caps and info.
func (cc *callerCache) put(version string, caps, info []byte, named bool, c caller) {
	if len(caps)+len(info) > maxMetaValue {
		return // a large envelope is rare, and would pin its bytes
	}
	e := &cachedCaller{version: version, caps: string(caps), info: string(info), named: named, capsDecoded: c.caps}
	if named {
		e.infoDecoded = c.info
	}
	cc.slot(version, caps, info).Store(e)
}

// envelopeCaps is the envelope's clientCapabilities as the SDK reads them (its
// clientCapabilitiesV2, whose roots are a pointer).
type envelopeCaps struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// v1 is what ServerRequest.ClientCapabilities returns for c.
func (c *envelopeCaps) v1() *mcp.ClientCapabilities {
	caps := c.ClientCapabilities
	caps.RootsV2 = c.Roots
	if c.Roots != nil {
		caps.Roots = *c.Roots
	}
	return &caps
}

// maxMetaValue bounds the envelope values decodeMeta reads itself: a larger one is
// decoded as the SDK decodes it, whose nesting limit (1,000) only such a value reaches.
const maxMetaValue = 900

// decodeMeta decodes v, a value of a request's _meta, into out as the SDK's
// decodeMetaValue does (encoded again, then decoded with case-sensitive field names),
// and reports whether it could; null is not a value. The SDK's decoder allocates
// 32 KiB a value, most of what a modern call allocated.
func decodeMeta(v any, out any) bool {
	if v == nil {
		return false
	}
	data, isRaw := v.(json.RawMessage) // as fastMeta keeps the envelope
	if !isRaw {
		var err error
		if data, err = json.Marshal(v); err != nil {
			return false
		}
	}
	if len(data) > maxMetaValue {
		return sdkDecodeMeta(v, out)
	}
	rest, err := segjson.Parse(data, out, segjson.DontMatchCaseInsensitiveStructFields)
	return err == nil && len(rest) == 0
}

// sdkDecodeMeta decodes v into out through the SDK (ServerRequest's accessors).
func sdkDecodeMeta(v any, out any) bool {
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: mcp.Meta{mcp.MetaKeyClientCapabilities: v, mcp.MetaKeyClientInfo: v}}}
	switch out := out.(type) {
	case *envelopeCaps:
		caps := req.ClientCapabilities()
		if caps == nil {
			return false
		}
		*out = envelopeCaps{ClientCapabilities: *caps, Roots: caps.RootsV2}
	case *mcp.Implementation:
		info := req.ClientInfo()
		if info == nil {
			return false
		}
		*out = *info
	}
	return true
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
	if fc.modern {
		fastCallers.store(fc.params, fc.caller)
		defer fastCallers.delete(fc.params)
	}
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
	if slot.refusal != nil && callerLacks(callerOf(req), slot.refusal) {
		return &jsonrpc.Response{ID: fc.id, Error: slot.refusal} // as listedTools.middleware
	}
	if fc.modern && res == slot.placeholder && res.Meta == nil && res.InputRequests == nil {
		if data, ok := modernForwarded(slot.raw, fc.ps.impl); ok {
			return &jsonrpc.Response{ID: fc.id, Result: data}
		}
	}
	var result mcp.Result = res
	switch {
	case res == nil:
		// As jsonrpc2 answers a handler that returns neither.
		return &jsonrpc.Response{ID: fc.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the tool returned no result"}}
	case fc.modern:
		if result, err = fc.modernResult(res, slot); err != nil {
			return &jsonrpc.Response{ID: fc.id, Error: wireError(err)}
		}
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

// typedResults are empty tools/call results of each result type, from which
// modernResult copies the type: the SDK keeps it unexported, and sets it only on its
// own path (callTool), which the fast path does not take.
var typedResults = func() map[string]mcp.CallToolResult {
	m := map[string]mcp.CallToolResult{}
	for _, rt := range []string{"complete", "input_required"} {
		var r mcp.CallToolResult
		// Cannot fail (a constant); TestFastCallBytes would see a result without its type.
		_ = json.Unmarshal([]byte(`{"content":[],"resultType":"`+rt+`"}`), &r)
		m[rt] = r
	}
	return m
}()

// modernResult is res as the SDK answers a caller of MCP 2026-07-28 with it: what its
// callTool does to a handler's result (the result type, input_required when the call
// asks for the client's input; content [] rather than null when complete; a result
// with both content and input requests refused), then what it does to every result of
// such a request (serverInfo in _meta, unless the result names one), and what
// listedTools.middleware does (the upstream's bytes, annotated, see forwardedResult).
func (fc *fastCall) modernResult(res *mcp.CallToolResult, slot *forwardSlot) (mcp.Result, error) {
	rt := "complete"
	if res.InputRequests != nil {
		if len(res.Content) > 0 || res.StructuredContent != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server bug: result has both content and inputRequests"}
		}
		rt = "input_required"
	}
	typed := typedResults[rt]
	typed.Meta, typed.Content, typed.StructuredContent, typed.IsError = res.Meta, res.Content, res.StructuredContent, res.IsError
	typed.InputRequests, typed.RequestState = res.InputRequests, res.RequestState
	if typed.Content == nil && rt == "complete" {
		typed.Content = []mcp.Content{}
	}
	if _, named := typed.Meta[mcp.MetaKeyServerInfo]; !named {
		meta := make(mcp.Meta, len(typed.Meta)+1)
		maps.Copy(meta, typed.Meta)
		meta[mcp.MetaKeyServerInfo] = serverInfoOf(fc.ps.impl)
		typed.Meta = meta
	}
	if res == slot.placeholder {
		return &forwardedResult{CallToolResult: &typed, raw: slot.raw}, nil
	}
	return &typed, nil
}

// serverInfos holds the encoded serverInfo of each profile server's implementation
// (profileServer.impl), which every result of a modern call carries: encoded once
// rather than at every call. An entry goes with its implementation (runtime.AddCleanup).
var serverInfos sync.Map // weak.Pointer[mcp.Implementation] -> json.RawMessage

// serverInfoOf returns impl as it is encoded in a result's _meta; impl itself when it
// cannot be encoded (the result's own encoding then reports why).
func serverInfoOf(impl *mcp.Implementation) any {
	key := weak.Make(impl)
	if v, ok := serverInfos.Load(key); ok {
		return v
	}
	data, err := marshal(impl)
	if err != nil {
		return impl
	}
	v, loaded := serverInfos.LoadOrStore(key, json.RawMessage(data))
	if !loaded {
		runtime.AddCleanup(impl, func(k weak.Pointer[mcp.Implementation]) { serverInfos.Delete(k) }, key)
	}
	return v
}

// modernForwarded is the upstream's result bytes raw as modernResult and
// forwardedResult write them for a modern caller when the handler added nothing to
// them (the placeholder with no _meta and no input requests): resultType "complete"
// where raw has none, toolshed's serverInfo in _meta, compacted, without encoding the
// placeholder to read those two members back. False when impl cannot be encoded or raw
// compacted, for the general path to report.
func modernForwarded(raw json.RawMessage, impl *mcp.Implementation) ([]byte, bool) {
	info, ok := serverInfoOf(impl).(json.RawMessage)
	if !ok {
		return nil, false
	}
	var meta, rt []byte
	jsonscan.Members(raw, func(key string, val []byte) bool {
		switch key {
		case "_meta":
			meta = val
		case "resultType":
			rt = val
		}
		return true
	})
	if len(meta) > 0 {
		// The upstream's own _meta gets serverInfo beside its members (rare: the
		// common case below writes the result once); a null one is replaced.
		if meta[0] != '{' {
			meta = []byte("{}")
		}
		members := []member{{Key: "resultType", Value: completeType}, {Key: "_meta", Value: setMembers(meta, member{Key: mcp.MetaKeyServerInfo, Value: info})}}
		if rt != nil {
			members = members[1:] // raw's own stays
		}
		var buf bytes.Buffer
		if json.Compact(&buf, setMembers(raw, members...)) != nil {
			return nil, false
		}
		return buf.Bytes(), true
	}
	// No _meta: the compacted result, its closing brace replaced by the members
	// added, in one buffer.
	buf := bytes.NewBuffer(make([]byte, 0, len(raw)+len(info)+len(modernTail)+len(completeMember)+2))
	if json.Compact(buf, raw) != nil {
		return nil, false
	}
	out := buf.Bytes()
	if len(out) < 2 || out[0] != '{' || out[len(out)-1] != '}' {
		return nil, false
	}
	empty := len(out) == 2
	out = out[:len(out)-1]
	if rt == nil {
		if !empty {
			out = append(out, ',')
		}
		out = append(out, completeMember...)
		empty = false
	}
	if !empty {
		out = append(out, ',')
	}
	out = append(out, modernTail...)
	out = append(out, info...)
	return append(out, "}}"...), true
}

// completeMember and modernTail are what modernForwarded appends to a result.
const (
	completeMember = `"resultType":"complete"`
	modernTail     = `"_meta":{"` + mcp.MetaKeyServerInfo + `":`
)

// completeType is the resultType of a complete result, as encoding/json writes it.
var completeType = []byte(`"complete"`)

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
