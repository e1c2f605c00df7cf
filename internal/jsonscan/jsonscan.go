// Package jsonscan walks JSON that is already known to be valid, without decoding it:
// object members and array elements as byte slices, in document order.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The functions here walk JSON that json.Valid (or json.Unmarshal, before it calls an
// UnmarshalJSON method) has already accepted. They exist because loading a catalog or a
// request means reading thousands of schemas, and encoding/json re-validates every nested
// value it is asked to decode; one validation pass plus this walk is several times
// faster, keeps keys exact (encoding/json's struct decoding ignores case) and keeps
// object members in document order.

// Members calls fn for each member of the object at b, in document order, with the
// member's value bytes. It stops early when fn returns false. b must be a valid object.
func Members(b []byte, fn func(key string, val []byte) bool) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i++
	for {
		i = SkipSpace(b, i)
		if i >= len(b) || b[i] == '}' {
			return
		}
		if b[i] == ',' {
			i++
			continue
		}
		end := skipString(b, i)
		key := Unquote(b[i:end])
		i = SkipSpace(b, end)
		if i < len(b) && b[i] == ':' {
			i++
		}
		i = SkipSpace(b, i)
		vend := SkipValue(b, i)
		if vend <= i {
			return // not valid JSON: stop rather than loop
		}
		if !fn(key, b[i:vend]) {
			return
		}
		i = vend
	}
}

// Elements calls fn for each element of the array at b. b must be a valid array.
func Elements(b []byte, fn func(val []byte)) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return
	}
	i++
	for {
		i = SkipSpace(b, i)
		if i >= len(b) || b[i] == ']' {
			return
		}
		if b[i] == ',' {
			i++
			continue
		}
		end := SkipValue(b, i)
		if end <= i {
			return // not valid JSON: stop rather than loop
		}
		fn(b[i:end])
		i = end
	}
}

// SkipSpace returns the index of the first byte at or after i that is not JSON space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'. It jumps
// from quote to quote with bytes.IndexByte, so long descriptions cost little.
func skipString(b []byte, i int) int {
	start := i + 1
	for i = start; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		// The quote ends the string unless an odd number of backslashes escape it.
		n := 0
		for k := i - 1; k >= start && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
		i++
	}
}

// SkipValue returns the index just past the value starting at b[i].
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' {
			i++
		}
		return i
	}
}

// Unquote decodes a JSON string token; it returns "" for anything else.
func Unquote(tok []byte) string {
	if len(tok) < 2 || tok[0] != '"' {
		return ""
	}
	inner := tok[1 : len(tok)-1]
	simple := true
	for _, c := range inner {
		if c == '\\' || c < 0x20 {
			simple = false
			break
		}
	}
	if simple {
		if s, ok := known[string(inner)]; ok {
			return s // no copy: see known
		}
		if utf8.Valid(inner) {
			return string(inner)
		}
	}
	var s string
	_ = json.Unmarshal(tok, &s)
	return s
}

// known holds the keys that nearly every message and definition toolshed reads has
// (JSON-RPC's, MCP's and JSON Schema's). Unquote returns the string held here for
// them, rather than a copy of the token: Members and MemberSpans unquote every key
// they pass, and a request walked several times (its era, its params, its _meta)
// would otherwise allocate a string per key per walk. The lookup itself does not
// allocate (the compiler does not copy string(b) used as a map index).
var known = func() map[string]string {
	keys := []string{
		// JSON-RPC.
		"jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data",
		// MCP requests, results and definitions.
		"_meta", "name", "title", "arguments", "progressToken", "progress", "total", "cursor", "nextCursor",
		"content", "type", "text", "isError", "structuredContent", "resultType", "requestState",
		"inputRequests", "inputResponses", "tools", "description", "inputSchema", "outputSchema",
		"annotations", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint",
		"execution", "taskSupport", "icons", "uri", "mimeType", "version", "capabilities",
		"extensions", "elicitation", "sampling", "roots", "listChanged", "taskId", "status",
		"ttlMs", "cacheScope", "pollIntervalMs", "requestId", "reason", "level", "logger",
		"traceparent", "tracestate", "baggage",
		"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo",
		"io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/serverInfo",
		"io.modelcontextprotocol/logLevel",
		// JSON Schema.
		"$schema", "$ref", "$defs", "definitions", "properties", "required", "items", "enum",
		"const", "default", "format", "pattern", "minimum", "maximum", "minLength", "maxLength",
		"minItems", "maxItems", "additionalProperties", "anyOf", "oneOf", "allOf", "not",
		"examples", "nullable",
	}
	m := make(map[string]string, len(keys))
	for _, k := range keys {
		m[k] = k
	}
	return m
}()
