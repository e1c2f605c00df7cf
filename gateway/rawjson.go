package gateway

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

// The gateway forwards tool definitions and tool results as the upstream's own JSON, not
// as a re-encoding of the SDK's structs (which drop members they do not model, add
// defaults the server omitted, and pass numbers through float64). Where the gateway must
// change something, it edits the bytes: it sets the members it owns and leaves every
// other byte of the object as received. The functions here do that on JSON that is
// already known to be valid.

// member is one member of a JSON object: its key and the bytes of its value.
type member = jsonscan.Member

// listedDefinition renders a tool definition as the gateway lists it: raw, the
// definition exactly as the upstream sent it, under the listed name, with the members of
// meta set in its "_meta" (added after the server's own members, or replacing a member of
// the same key). The only other change is MCP's own rule: inputSchema (and outputSchema,
// when there is one) must be a JSON Schema of "type": "object" (the spec's Tool type
// fixes type: "object", and clients such as the SDKs and the model APIs reject or
// mis-handle a schema without it), so a schema without "type" gets "type": "object" first
// and a tool without inputSchema gets {"type":"object"}. raw must be a valid JSON object.
func listedDefinition(raw json.RawMessage, name string, meta ...member) []byte {
	quoted, _ := json.Marshal(name)
	set := []member{{Key: "name", Value: quoted}}
	var input, output []byte
	jsonscan.Members(raw, func(key string, val []byte) bool {
		switch key {
		case "inputSchema":
			input = val
		case "outputSchema":
			output = val
		}
		return true
	})
	if fixed := objectSchema(input); !bytes.Equal(fixed, input) {
		set = append(set, member{Key: "inputSchema", Value: fixed})
	}
	if len(output) > 0 && !isNull(output) {
		if fixed := objectSchema(output); !bytes.Equal(fixed, output) {
			set = append(set, member{Key: "outputSchema", Value: fixed})
		}
	}
	out := setMembers(raw, set...)
	if len(meta) > 0 {
		out = withMeta(out, meta...)
	}
	return out
}

// objectSchema returns schema with a "type" member: as it is when it has one, else with
// "type": "object" added first. An absent or null schema is {"type":"object"}.
func objectSchema(schema json.RawMessage) []byte {
	s := bytes.TrimSpace(schema)
	if len(s) == 0 || isNull(s) {
		return []byte(`{"type":"object"}`)
	}
	hasType := false
	jsonscan.Members(s, func(key string, _ []byte) bool {
		hasType = key == "type"
		return !hasType
	})
	if hasType {
		return schema
	}
	rest := bytes.TrimSpace(s[1:])
	if len(rest) > 0 && rest[0] == '}' {
		return []byte(`{"type":"object"}`)
	}
	return append([]byte(`{"type":"object",`), s[1:]...)
}

// withMeta returns obj with members set in its "_meta" object (created, after the other
// members, when obj has none or a null one).
func withMeta(obj []byte, members ...member) []byte {
	var meta []byte
	jsonscan.Members(obj, func(key string, val []byte) bool {
		if key == "_meta" {
			meta = val
		}
		return true
	})
	if len(meta) == 0 || isNull(meta) || meta[0] != '{' {
		meta = []byte("{}")
	}
	return setMembers(obj, member{Key: "_meta", Value: setMembers(meta, members...)})
}

// setMembers is jsonscan.SetMembers: obj with each of members set, every other byte as
// it is.
func setMembers(obj []byte, members ...member) []byte { return jsonscan.SetMembers(obj, members...) }

// memberSpans is jsonscan.MemberSpans.
func memberSpans(obj []byte, fn func(key string, start, end int)) { jsonscan.MemberSpans(obj, fn) }

// memberValue returns the value of the first member key of obj, or nil.
func memberValue(obj []byte, key string) []byte {
	var v []byte
	jsonscan.Members(obj, func(k string, val []byte) bool {
		if k == key {
			v = val
			return false
		}
		return true
	})
	return v
}

// hasMemberFold reports whether obj has a member whose key encoding/json would decode
// into a struct field tagged key (which it matches ignoring case).
func hasMemberFold(obj []byte, key string) bool {
	found := false
	jsonscan.Members(obj, func(k string, _ []byte) bool {
		found = strings.EqualFold(k, key)
		return !found
	})
	return found
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// marshal is json.Marshal without HTML escaping, which would rewrite <, > and & (and
// U+2028, U+2029) in strings; the SDK writes its messages without it too.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}
