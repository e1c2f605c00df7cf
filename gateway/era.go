package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP 2026-07-28 ("modern") drops the initialize handshake: a client says its protocol
// version, identity and capabilities in every request's _meta, under the
// io.modelcontextprotocol/ namespace (the envelope), and a server may ask the client for
// input by answering a call with resultType "input_required" (multi round-trip
// requests, MRTR) rather than by sending it requests. The SDK's client negotiates the
// era of each upstream connection (server/discover, falling back to initialize) and
// stamps the envelope on the requests it makes itself. What toolshed sends around the
// SDK, and what it forwards from its clients, is handled here, so that the rest of the
// gateway sees calls, not eras.

// modernProtocol is the first protocol version of the modern era.
const modernProtocol = "2026-07-28"

// envelopePrefix starts the _meta keys of the envelope. The keys under it are the
// protocol's own: a client's must never reach an upstream, which would take toolshed
// for that client (its version, its claimed capabilities).
const envelopePrefix = "io.modelcontextprotocol/"

// modernVersion reports whether protocol version v is of the modern era. Versions are
// dates, so they compare as strings.
func modernVersion(v string) bool { return v >= modernProtocol }

// ErrInputNotRelayed is the error of a call whose upstream asked for the client's
// input through MRTR (resultType "input_required") in a way toolshed could not relay
// (see parseInputNeed, needInput); the error says why.
var ErrInputNotRelayed = errors.New("the server asked for the client's input through MRTR (resultType input_required), and toolshed could not relay it")

// callMeta is the _meta of a tools/call toolshed forwards on l, made from the client's
// meta: every key but the client's envelope (progressToken, traceparent, tracestate,
// baggage and any other key pass), and, on a modern connection, toolshed's own envelope
// (the one the SDK stamped on this connection's requests, see captureConn.learn) with
// the log level toolshed asks every upstream for (a modern server takes it per request,
// not from logging/setLevel) and the capabilities of the calling client, caller: a
// modern server asks for input as part of the call (MRTR), and toolshed relays it to
// that client only, so what the other clients support (what the connection declared,
// see clientSupport) is not what this call can be asked. The SDK's Streamable HTTP
// client stamps the envelope itself, but only the keys not present already: hence the
// client's are dropped on every connection.
func (l *link) callMeta(client mcp.Meta, caller clientSupport) mcp.Meta {
	if !l.modern() && !hasEnvelopeKey(client) {
		return client // the common case of an old server, as it always was
	}
	m := make(mcp.Meta, len(client)+4)
	maps.Copy(m, withoutEnvelope(client))
	if l.modern() {
		if l.conn != nil {
			for k, v := range l.conn.envelope() {
				m[k] = v
			}
		}
		m[mcp.MetaKeyLogLevel] = upstreamLogLevel
		var caps any = caller.capabilities()
		if l.advertisesTasks() {
			caps = declareTasks(caps)
		}
		m[mcp.MetaKeyClientCapabilities] = caps
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// withoutEnvelope is a client's _meta without the keys of its envelope, for a request
// toolshed forwards through the SDK's client, which stamps toolshed's own but keeps keys
// already present (see callMeta).
func withoutEnvelope(client mcp.Meta) mcp.Meta {
	if !hasEnvelopeKey(client) {
		return client
	}
	m := make(mcp.Meta, len(client))
	for k, v := range client {
		if !strings.HasPrefix(k, envelopePrefix) {
			m[k] = v
		}
	}
	return m
}

// hasEnvelopeKey reports whether m has a key of the envelope's namespace.
func hasEnvelopeKey(m mcp.Meta) bool {
	for k := range m {
		if strings.HasPrefix(k, envelopePrefix) {
			return true
		}
	}
	return false
}

// upstreamLogLevel is the level toolshed asks upstreams to log at: all of it, as the
// clients' own levels are applied when a message is relayed (see loglevel.go).
const upstreamLogLevel = "debug"

// modern reports whether l speaks the modern protocol.
func (l *link) modern() bool { return modernVersion(l.version) }

// envelopeMeta holds the envelope the SDK's client stamped on the latest request it
// sent on a connection, for the requests toolshed writes itself on that connection.
type envelopeMeta struct {
	mu   sync.Mutex
	keys map[string]json.RawMessage
}

// learn keeps the envelope keys of an outgoing request's params, when it has any.
func (e *envelopeMeta) learn(params json.RawMessage) {
	meta := memberValue(params, "_meta")
	if len(meta) == 0 || !bytes.Contains(meta, []byte(mcp.MetaKeyProtocolVersion)) {
		return
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(meta, &all) != nil {
		return
	}
	keys := make(map[string]json.RawMessage, 3)
	for _, k := range []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities} {
		if v, ok := all[k]; ok {
			keys[k] = v
		}
	}
	e.mu.Lock()
	e.keys = keys
	e.mu.Unlock()
}

// envelope returns the keys learn kept (never to be changed by the caller).
func (e *envelopeMeta) envelope() map[string]json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.keys
}

// needsInput reports whether raw, a tools/call result, asks for the client's input
// through MRTR.
func needsInput(raw json.RawMessage) bool {
	v := memberValue(raw, "resultType")
	return len(v) > 0 && bytes.Equal(bytes.TrimSpace(v), []byte(`"input_required"`))
}
