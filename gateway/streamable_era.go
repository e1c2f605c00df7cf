package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A request of MCP 2026-07-28 and later carries its protocol version, the client's
// capabilities and its identity in its own _meta (the envelope), and needs no session.
// The Streamable HTTP front does not serve that protocol yet: server/discover offers
// only ProtocolVersions. But the go-sdk's session serves an enveloped request it is
// handed, and takes the envelope for an initialize, so a POST without a session that
// carried one kept the session it opened for good: with no Mcp-Session-Id given, its
// client could not end it, and a few such POSTs held every slot (--max-sessions) until
// the idle timeout. Such a POST is refused before any session is opened, as the
// protocol says a server refuses a version it does not speak: HTTP 400 and the JSON-RPC
// error UnsupportedProtocolVersion, naming the versions toolshed speaks, on which
// clients that speak both eras fall back to initialize (the TypeScript SDK v2 client in
// its "auto" mode, the go-sdk client). This is what the go-sdk's own stateful handler
// answers.

// unservedVersion returns the first request of msgs whose envelope asks for a protocol
// version toolshed does not speak, and that version; nil when none does.
// server/discover is not refused: it is the probe by which such a client learns the
// versions toolshed speaks (see directFront.SupportsProtocolVersion).
func unservedVersion(msgs []jsonrpc.Message) (*jsonrpc.Request, string) {
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() || req.Method == "server/discover" || len(req.Params) == 0 {
			continue
		}
		// Decoded in full rather than searched for the key: a key with an escaped
		// character ("io.modelcontextprotocol\/protocolVersion") is the same key to the
		// SDK.
		var params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(req.Params, &params) != nil {
			continue // the session answers it as malformed
		}
		var v string
		if json.Unmarshal(params.Meta[mcp.MetaKeyProtocolVersion], &v) != nil || v == "" || slices.Contains(protocolVersions, v) {
			continue
		}
		return req, v
	}
	return nil, ""
}

// refuseVersion answers a request that asked for protocol version v, which toolshed
// does not speak.
func refuseVersion(w http.ResponseWriter, req *jsonrpc.Request, v string) {
	data, err := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: protocolVersions, Requested: v})
	if err != nil {
		http.Error(w, "failed to encode the refusal", http.StatusInternalServerError)
		return
	}
	last := len(protocolVersions) - 1
	writeJSONRPCError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{
		Code: mcp.CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("protocol version %q is not supported: toolshed speaks %s and %s; start a session with initialize",
			v, strings.Join(protocolVersions[:last], ", "), protocolVersions[last]),
		Data: data,
	})
}

// writeJSONRPCError answers a POST with the JSON-RPC error e for its request id, and
// HTTP status code, as the SDK's handler answers the requests it refuses.
func writeJSONRPCError(w http.ResponseWriter, code int, id jsonrpc.ID, e *jsonrpc.Error) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e})
	if err != nil {
		http.Error(w, "failed to encode the error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(data)
}
