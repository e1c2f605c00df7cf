package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

// MCP 2026-07-28 over Streamable HTTP repeats what routes a request in its headers, so
// that a proxy or balancer need not read the body: Mcp-Method (the method), Mcp-Name
// (the tool, prompt or resource a tools/call, prompts/get or resources/read names) and,
// for a tool whose input schema marks an argument with "x-mcp-header": NAME, an
// Mcp-Param-NAME header with that argument's value. A server must refuse a request
// whose headers and body disagree (HTTP 400, HeaderMismatch -32020): what a proxy
// routed by must be what the server runs. These are the rules of the go-sdk's own
// handler (v1.8.0, unexported: validateMcpHeaders and validateParamHeaders in
// streamable_headers.go), which toolshed's front does not use.

// headerMismatch checks the MCP headers of a modern POST against its one request,
// and returns what disagrees, or nil. bindingsOf returns the x-mcp-header bindings of
// a tool the caller may call (see headerBindings), false for one it does not know
// (whose call is refused later, as any unknown tool's).
func headerMismatch(h http.Header, req *jsonrpc.Request, bindingsOf func(name string) ([]headerBinding, bool)) error {
	method := h.Get("Mcp-Method")
	if method == "" {
		return errors.New("missing required Mcp-Method header")
	}
	if method != req.Method {
		return fmt.Errorf("header mismatch: Mcp-Method header value '%s' does not match body value '%s'", method, req.Method)
	}
	var key string
	switch req.Method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	default:
		return nil
	}
	header := h.Get("Mcp-Name")
	if header == "" {
		return fmt.Errorf("missing required Mcp-Name header for method %q", req.Method)
	}
	v := memberValue(req.Params, key)
	if len(v) == 0 || v[0] != '"' {
		return fmt.Errorf("failed to extract name from parameters for method %q", req.Method)
	}
	name := header
	if string(v[1:len(v)-1]) != header || bytes.IndexByte(v, '\\') >= 0 { // a name with no escape to decode is compared as it is: no copy
		name = jsonscan.Unquote(v)
	}
	if header != name {
		return fmt.Errorf("header mismatch: Mcp-Name header value '%s' does not match body value '%s'", header, name)
	}
	if req.Method == "tools/call" && bindingsOf != nil {
		if bindings, known := bindingsOf(name); known {
			return paramHeaderMismatch(h, req.Params, bindings)
		}
	}
	return nil
}

// paramHeaderMismatch checks the Mcp-Param-* headers of a tools/call against the
// arguments its tool's input schema marks with x-mcp-header (bindings).
func paramHeaderMismatch(h http.Header, params json.RawMessage, bindings []headerBinding) error {
	if len(bindings) == 0 {
		return nil
	}
	var raw struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &raw) != nil {
		return nil // the call's own checks refuse it
	}
	for _, b := range bindings {
		name := "Mcp-Param-" + b.header
		path := strings.Join(b.path, ".")
		value := h.Get(name)
		arg, ok := lookupArgument(raw.Arguments, b.path)
		if !ok || string(arg) == "null" {
			if value != "" {
				return fmt.Errorf("header mismatch: unexpected %s header for absent or null parameter %q", name, path)
			}
			continue
		}
		if value == "" {
			return fmt.Errorf("header mismatch: missing %s header for parameter %q", name, path)
		}
		decoded, ok := decodeHeaderValue(value)
		if !ok {
			return fmt.Errorf("header mismatch: %s header contains invalid Base64 encoding", name)
		}
		body := headerPrimitive(arg)
		if body == nil {
			return fmt.Errorf("header mismatch: %s header present but body parameter %q is not a primitive type", name, path)
		}
		if !primitiveEqual(decoded, body) {
			return fmt.Errorf("header mismatch: %s header value '%s' does not match body value", name, value)
		}
	}
	return nil
}

// headerBinding is an argument (by its path of property names) that a header carries.
type headerBinding struct {
	path   []string
	header string
}

// schemaProperty is what an input schema's property says of headers.
type schemaProperty struct {
	XMCPHeader json.RawMessage           `json:"x-mcp-header,omitempty"`
	Properties map[string]schemaProperty `json:"properties,omitempty"`
}

// headerBindings returns the arguments of an input schema marked with x-mcp-header, at
// any depth of nested objects.
func headerBindings(schema json.RawMessage) []headerBinding {
	var s schemaProperty
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []headerBinding
	var walk func(props map[string]schemaProperty, prefix []string)
	walk = func(props map[string]schemaProperty, prefix []string) {
		for name, p := range props {
			path := append(append([]string(nil), prefix...), name)
			var header string
			if json.Unmarshal(p.XMCPHeader, &header) == nil && header != "" {
				out = append(out, headerBinding{path: path, header: header})
			}
			walk(p.Properties, path)
		}
	}
	walk(s.Properties, nil)
	return out
}

// lookupArgument returns the argument at path, and whether there is one.
func lookupArgument(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	if len(path) == 0 {
		return nil, false
	}
	cur, ok := args[path[0]]
	for _, part := range path[1:] {
		if !ok {
			break
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[part]
	}
	return cur, ok
}

// maxSafeInteger bounds the integers a header may carry: those a double holds exactly.
const maxSafeInteger = 1<<53 - 1

// headerPrimitive returns an argument a header may carry as a string, bool or int64,
// nil for any other (numbers that are not safe integers included).
func headerPrimitive(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	switch v := v.(type) {
	case string, bool:
		return v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || math.Abs(v) > maxSafeInteger {
			return nil
		}
		return int64(v)
	}
	return nil
}

// primitiveEqual reports whether a (decoded) header value is body's value.
func primitiveEqual(header string, body any) bool {
	switch v := body.(type) {
	case int64:
		n, err := strconv.ParseFloat(header, 64)
		return err == nil && n == math.Trunc(n) && math.Abs(n) <= maxSafeInteger && int64(n) == v
	case bool:
		return header == strconv.FormatBool(v)
	case string:
		return header == v
	}
	return false
}

// decodeHeaderValue decodes a header value that may be Base64 in the =?base64?...?=
// wrapper, and reports false when the wrapper holds no valid Base64.
func decodeHeaderValue(v string) (string, bool) {
	if enc, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if enc, ok = strings.CutSuffix(enc, "?="); ok {
			b, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				return "", false
			}
			return string(b), true
		}
	}
	return v, true
}
