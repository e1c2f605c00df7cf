package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

// A request of MCP 2026-07-28 carries its protocol version, the client's capabilities
// and its identity in its own _meta (the envelope), and needs no session: over
// Streamable HTTP the protocol is stateless. The front serves such a POST as
// --stateless serves every POST (serveStateless): on a session of its own that ends
// with the POST, is counted against no session cap, and whose token and profile are
// the request's. A session's Mcp-Session-Id is never issued to it, so before this, a
// POST that carried an envelope kept the session it opened for good, and a few held
// every slot (--max-sessions). The same endpoint goes on serving the sessions of
// older clients.
//
// The front refuses in the protocol's terms, as the go-sdk's stateless handler does:
// headers that disagree with the body (HeaderMismatch -32020, see
// streamable_headers.go), a missing or malformed envelope (-32602), a version toolshed
// does not speak (UnsupportedProtocolVersion -32022, naming those it does), a method
// the protocol removed (-32601), each with the HTTP status the protocol gives it
// (errorStatus); and a batch, which the protocol has not had since 2025-06-18.

// modernPOST reads the era of a POST that names no session: it returns the modern
// protocol version the POST speaks, or "" for one that belongs to the legacy protocol
// (an initialize, or a probe before it). A modern POST whose headers, envelope or
// shape are wrong is answered here, and ok is false.
func (h *streamableFront) modernPOST(w http.ResponseWriter, r *http.Request, p post, profile string) (version string, ok bool) {
	header := r.Header.Get("Mcp-Protocol-Version")
	var req *jsonrpc.Request
	var env envelope
	var refusal *jsonrpc.Error
	modern := modernVersion(header) && !p.initialize
	for _, m := range p.msgs {
		if r, isReq := m.(*jsonrpc.Request); isReq && r.IsCall() {
			e, err := classifyRequest(r)
			if err != nil || e.version != "" {
				modern = true
			}
			if req == nil {
				req, env, refusal = r, e, err
			}
		}
	}
	if !modern {
		return "", true
	}
	if p.batch || len(p.msgs) > 1 {
		writeJSONRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "Invalid Request: a POST of MCP 2026-07-28 carries one message; JSON-RPC batches are not part of MCP since 2025-06-18"})
		return "", false
	}
	if req == nil {
		// A notification or a response: nothing of the envelope to check, and no
		// session for it to concern. Accepted as the per-POST session takes it.
		return header, true
	}
	fail := func(e *jsonrpc.Error) (string, bool) {
		writeJSONRPCError(w, errorStatus(e.Code), req.ID, e)
		return "", false
	}
	switch {
	case header == "":
		return fail(&jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf(
			"Bad Request: the Mcp-Protocol-Version header is required on a request that carries _meta %q", mcp.MetaKeyProtocolVersion)})
	case env.version == "" && refusal == nil:
		return fail(missingEnvelope(req.Method, header))
	case env.version != "" && header != env.version:
		return fail(&jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf(
			"Bad Request: the Mcp-Protocol-Version header %q does not match the request's _meta %q %q", header, mcp.MetaKeyProtocolVersion, env.version)})
	}
	if refusal == nil || refusal.Code != jsonrpc.CodeInvalidParams {
		if err := headerMismatch(r.Header, req, h.g.profileServer(profile).tools.headerBindingsOf); err != nil {
			return fail(&jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "Bad Request: " + err.Error()})
		}
	}
	if refusal != nil {
		return fail(refusal)
	}
	return env.version, true
}

// errorStatus is the HTTP status the modern protocol answers a JSON-RPC error code
// with (SEP-2575, as the go-sdk maps it): 404 for a method it does not have, 400 for
// bad params, an unsupported version, a missing capability or a header mismatch, and
// otherwise 200, the error being the request's answer.
func errorStatus(code int64) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities, mcp.CodeHeaderMismatch:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// answerStatus is the HTTP status of a modern POST's one answer, data (see errorStatus).
func answerStatus(data []byte) int {
	// A response has a result or an error: the scan stops at whichever comes first,
	// rather than skipping a result of any size to look for an error after it.
	var raw []byte
	jsonscan.Members(data, func(key string, val []byte) bool {
		if key == "error" {
			raw = val
		}
		return key != "error" && key != "result"
	})
	if raw == nil {
		return http.StatusOK
	}
	var e struct {
		Code int64 `json:"code"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return http.StatusOK
	}
	return errorStatus(e.Code)
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
