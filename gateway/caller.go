package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/jsonscan"
	"github.com/toolshed/toolshed/policy"
)

// toolshed serves both eras of MCP to its clients on the same stdio front and the same
// Streamable HTTP endpoint: a client that initialized a session (2024-11-05 to
// 2025-11-25), and a client that sends every request with its envelope (2026-07-28).
// The connection layer classifies each request (classifyRequest) and refuses a bad
// envelope in the protocol's terms; the gateway's handlers then ask callerOf who sent
// a request, and never compare versions themselves.

// caller is who sent a request, as the gateway's handlers need to know it: the protocol
// version it speaks and what it declared it supports. A modern request's caller is read
// from its own envelope; the SDK freezes a session's InitializeParams at the first
// enveloped request it sees (ServerSession.handle), which would judge every later
// request by the first one's capabilities.
type caller struct {
	version string
	modern  bool // the request speaks a protocol with MRTR and no session
	caps    *mcp.ClientCapabilities
	info    *mcp.Implementation
}

// perRequest is what the SDK's ServerRequest of any params type reads from a
// request's own _meta, falling back to its session's initialize.
type perRequest interface {
	ProtocolVersion() string
	ClientCapabilities() *mcp.ClientCapabilities
	ClientInfo() *mcp.Implementation
}

// callerOf returns who sent req. Only a modern request is read from its envelope: a
// legacy client that puts envelope keys in its _meta claims nothing by them; its
// session's initialize says what it supports.
func callerOf(req mcp.Request) caller {
	if req == nil {
		return caller{}
	}
	if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
		if c, ok := fastCallers.load(p); ok {
			return c
		}
	}
	if r, ok := req.(perRequest); ok {
		if v := r.ProtocolVersion(); modernVersion(v) {
			return caller{version: v, modern: true, caps: r.ClientCapabilities(), info: r.ClientInfo()}
		}
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return sessionCaller(ss)
}

// fastCallers holds the caller of each modern call the fast path serves, by its params,
// while it runs (see fastCallOf): the gateway asks callerOf several times a call, and
// the SDK decodes the envelope afresh each time, with a decoder that allocates 32 KiB.
var fastCallers = callerTable{m: map[*mcp.CallToolParamsRaw]caller{}}

// callerTable is a map guarded by a lock rather than a sync.Map: an entry lives for
// one call, and a sync.Map allocates a node for every key it stores, where a map
// reuses the room its deleted entries leave.
type callerTable struct {
	mu sync.RWMutex
	m  map[*mcp.CallToolParamsRaw]caller
}

func (t *callerTable) load(p *mcp.CallToolParamsRaw) (caller, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	c, ok := t.m[p]
	return c, ok
}

func (t *callerTable) store(p *mcp.CallToolParamsRaw, c caller) {
	t.mu.Lock()
	t.m[p] = c
	t.mu.Unlock()
}

func (t *callerTable) delete(p *mcp.CallToolParamsRaw) {
	t.mu.Lock()
	delete(t.m, p)
	t.mu.Unlock()
}

// sessionCaller is the caller of a session's requests as its initialize (or, for a
// stateless POST's session, its one request) set it.
func sessionCaller(ss *mcp.ServerSession) caller {
	if ss == nil {
		return caller{}
	}
	p := ss.InitializeParams()
	if p == nil {
		return caller{}
	}
	return caller{version: p.ProtocolVersion, modern: modernVersion(p.ProtocolVersion), caps: p.Capabilities, info: p.ClientInfo}
}

// support is what c declared it supports, as toolshed relays it.
func (c caller) support() clientSupport {
	return supportOf(&mcp.InitializeParams{Capabilities: c.caps})
}

// removedMethods are the methods of the legacy protocol that a modern request may not
// call: the handshake, ping, and what the envelope or subscriptions/listen replaced.
var removedMethods = []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// envelope is what classifyRequest read from a request's envelope.
type envelope struct {
	version string // empty: the request has none, and belongs to a session
	caps    json.RawMessage
	info    json.RawMessage
}

// classifyRequest reads the envelope of a client's request, and returns the error to
// answer it with when its envelope is malformed, asks for a version toolshed does not
// speak, or calls a method the modern protocol removed. A request without an envelope
// (or a notification) belongs to a session: env.version is empty.
//
// It is the one place where both fronts (stdio and Streamable HTTP) tell the eras
// apart, so that what else routes requests by era can call it.
func classifyRequest(req *jsonrpc.Request) (envelope, *jsonrpc.Error) {
	var env envelope
	if !req.IsCall() || len(req.Params) == 0 {
		return env, nil
	}
	meta, ok := paramsMeta(req.Params)
	if !ok {
		return env, nil // not an object: the SDK answers it as malformed
	}
	raw := meta.version
	if raw == nil {
		return env, nil
	}
	if env.version = versionOf(raw); env.version == "" { // "" for what is not a string too
		return envelope{}, invalidEnvelope(fmt.Sprintf("_meta %q must be a protocol version such as %q", mcp.MetaKeyProtocolVersion, modernProtocol))
	}
	if !modernVersion(env.version) {
		return envelope{}, nil // an old version: the session's, as the SDK reads it
	}
	// A version that sorts after the first modern one is taken as modern, as the SDK
	// takes it, even one that is not a date ("v999.0.0"): a client of a later
	// protocol learns from the refusal which versions toolshed speaks, server/discover
	// included.
	if !slices.Contains(protocolVersions, env.version) {
		return env, unsupportedVersion(env.version)
	}
	if slices.Contains(removedMethods, req.Method) {
		return env, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("Method not found: %s is not part of MCP %s; a request that carries %q needs no session", req.Method, env.version, mcp.MetaKeyProtocolVersion)}
	}
	env.caps, env.info = meta.caps, meta.info
	if !isObject(env.caps) {
		return env, invalidEnvelope(fmt.Sprintf("_meta %q is missing or not an object: a request of MCP %s must declare the client's capabilities ({} for none)", mcp.MetaKeyClientCapabilities, env.version))
	}
	if env.info != nil && !isObject(env.info) {
		return env, invalidEnvelope(fmt.Sprintf("_meta %q must be an object with the client's name and version", mcp.MetaKeyClientInfo))
	}
	return env, nil
}

// versionOf decodes a JSON string token that names a protocol version: one toolshed
// speaks is returned as its own constant (a request carries its version in every
// request, and a copy each time would be garbage), any other string decoded, and
// anything else "".
func versionOf(tok []byte) string {
	if len(tok) > 2 && tok[0] == '"' && tok[len(tok)-1] == '"' {
		for _, v := range protocolVersions {
			if string(tok[1:len(tok)-1]) == v {
				return v
			}
		}
	}
	return jsonscan.Unquote(tok)
}

// missingEnvelope is the error of a request without an envelope on a connection or
// POST that speaks the modern protocol.
func missingEnvelope(method, version string) *jsonrpc.Error {
	return invalidEnvelope(fmt.Sprintf("%s has no _meta %q: every request of MCP %s carries the envelope (protocolVersion, clientCapabilities, clientInfo)", method, mcp.MetaKeyProtocolVersion, version))
}

func invalidEnvelope(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + msg}
}

// unsupportedVersion is the protocol's refusal of version v (UnsupportedProtocolVersion),
// naming the versions toolshed speaks.
func unsupportedVersion(v string) *jsonrpc.Error {
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: protocolVersions, Requested: v})
	last := len(protocolVersions) - 1
	return &jsonrpc.Error{
		Code: mcp.CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("Unsupported protocol version %q: toolshed speaks %s and %s",
			v, strings.Join(protocolVersions[:last], ", "), protocolVersions[last]),
		Data: data,
	}
}

// metaEnvelope is the members of a request's _meta that make its envelope, as
// encoding/json decodes _meta into a map: the last of a repeated key, nil for one the
// _meta lacks.
type metaEnvelope struct {
	version, caps, info json.RawMessage
}

// set takes member key of _meta, with value val, into e when it is one of the envelope's.
func (e *metaEnvelope) set(key string, val json.RawMessage) {
	switch key {
	case mcp.MetaKeyProtocolVersion:
		e.version = val
	case mcp.MetaKeyClientCapabilities:
		e.caps = val
	case mcp.MetaKeyClientInfo:
		e.info = val
	}
}

// paramsMeta returns the envelope members of a request's params' _meta, as
// encoding/json decodes params into a struct with a `json:"_meta"` map: false when
// params is not an object (or its _meta not an object or null); null params have no
// _meta. params is valid JSON (the connection decoded the message), so the ordinary
// case, one member named exactly _meta, is read by a scan of that member's members,
// which decodes none of them (nor the arguments beside it); a member whose name only
// folds to _meta (encoding/json matches "_META" too), or _meta twice (merged), is left
// to the full decode, which keeps those cases as they were.
func paramsMeta(params json.RawMessage) (metaEnvelope, bool) {
	var env metaEnvelope
	switch i := jsonscan.SkipSpace(params, 0); {
	case i < len(params) && params[i] == 'n':
		return env, true // null: no _meta, as encoding/json decodes it into a struct
	case i >= len(params) || params[i] != '{':
		return env, false
	}
	var val []byte
	exact, folded := 0, 0
	jsonscan.Members(params, func(key string, v []byte) bool {
		switch {
		case key == "_meta":
			exact++
			val = v
		case strings.EqualFold(key, "_meta"):
			folded++
		}
		return true
	})
	if exact == 1 && folded == 0 {
		switch {
		case val[0] == 'n':
			return env, true // null
		case val[0] != '{':
			return env, false
		}
		jsonscan.Members(val, func(key string, v []byte) bool {
			env.set(key, v)
			return true
		})
		return env, true
	}
	var full struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &full) != nil {
		return env, false
	}
	for k, v := range full.Meta {
		env.set(k, v)
	}
	return env, true
}

// isObject reports whether raw, a valid JSON value, is an object (not null).
func isObject(raw json.RawMessage) bool {
	i := jsonscan.SkipSpace(raw, 0)
	return i < len(raw) && raw[i] == '{'
}

// listTTL is how long a modern client may cache a list toolshed answers when nothing
// is about to change it (see cacheable).
const listTTL = 30 * time.Second

// cacheable sets the cache-control fields (ttlMs, cacheScope) of profile's results
// (mcp.ServerOptions.SetCacheable). A list is "private" whenever what one caller sees
// may differ from what another does: a profile narrows it, tokens select profiles, or
// hooks allow or deny tools. Its TTL is 0 while it may change on its own soon (tool
// search in auto mode may turn on or off as tools come and go, an upstream is still
// starting), and listTTL otherwise; list_changed (subscriptions/listen) tells a client
// of any change before then.
func (g *Gateway) cacheable(profile string) func(context.Context, mcp.Request, *mcp.Cacheable) {
	return func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
		if g.narrowed(profile) {
			c.CacheScope = "private"
		}
		if _, read := req.(*mcp.ReadResourceRequest); read {
			return // the upstream's resource, as its server said it may be cached
		}
		c.TTLMs = 0
		if g.searchMode() != policy.Auto && g.settled(g.upstreams) {
			c.TTLMs = int(listTTL / time.Millisecond)
		}
	}
}

// narrowed reports whether profile's lists may differ from another caller's.
func (g *Gateway) narrowed(profile string) bool {
	if profile != "" || !g.cfg.Profiles[profile].Scope.IsZero() {
		return true
	}
	for _, p := range g.cfg.Profiles {
		if p.Token != "" {
			return true
		}
	}
	return len(g.hooks.cfg.Allow) > 0 || len(g.hooks.cfg.Deny) > 0
}

// searchMode is the tool search mode in effect (see assembly.plan).
func (g *Gateway) searchMode() policy.Mode {
	if g.opts.Mode != "" {
		return g.opts.Mode
	}
	if m := g.cfg.ToolSearch.Enabled; m != "" {
		return m
	}
	return policy.Auto
}

// missingCapability records that a call needs a capability its caller may not have
// declared (MissingRequiredClientCapability, -32021): toolshed's approval prompt needs
// elicitation, and an upstream refuses a call when toolshed declared to it, on no
// caller's behalf, less than the call needs. A modern caller that did not declare it
// gets the refusal as the protocol's error (see listedTools.middleware, callerLacks);
// anyone else gets the tool error made for it.
func missingCapability(ctx context.Context, e *jsonrpc.Error) {
	if slot, _ := ctx.Value(forwardKey{}).(*forwardSlot); slot != nil {
		slot.refusal = e
	}
}

// callerLacks reports whether c is a modern caller that declared none of the
// capabilities the refusal e requires: the refusal is then the caller's to fix (declare
// the capability), not toolshed's. A caller that declared one of them, or an e whose
// data names none, is not told to declare what it did.
func callerLacks(c caller, e *jsonrpc.Error) bool {
	if !c.modern {
		return false
	}
	var required map[string]json.RawMessage
	if json.Unmarshal(e.Data, &struct {
		Required *map[string]json.RawMessage `json:"requiredCapabilities"`
	}{&required}) != nil || len(required) == 0 {
		return false
	}
	caps := c.caps
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	for name := range required {
		switch name {
		case "sampling":
			if caps.Sampling != nil {
				return false
			}
		case "elicitation":
			if caps.Elicitation != nil {
				return false
			}
		case "roots":
			if caps.RootsV2 != nil {
				return false
			}
		}
	}
	return true
}

// needsElicitation is the refusal of a call of tool, which needs the user's approval,
// from a caller that did not declare elicitation.
func needsElicitation(tool string) *jsonrpc.Error {
	// Written out: the SDK's ClientCapabilities would add roots, which it is not.
	data := json.RawMessage(`{"requiredCapabilities":{"elicitation":{}}}`)
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: fmt.Sprintf("Missing required client capability: %s needs the user's approval, asked through elicitation; declare the elicitation capability in _meta %q", tool, mcp.MetaKeyClientCapabilities)}
}
