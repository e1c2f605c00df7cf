package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

// maxParamDepth bounds how deep nested object properties are collected for search.
const maxParamDepth = 3

// toolFields are the members of an MCP Tool that toolshed reads, each as received.
type toolFields struct {
	name, title, description, inputSchema, outputSchema, annotations, meta json.RawMessage
}

// decodeTool reads one MCP Tool object. It checks exactly what toolshed relies on and keeps
// every value's bytes as received. The returned tool is non-nil whenever a name was read,
// so problems can name it.
func decodeTool(server string, raw json.RawMessage) (*Tool, error) {
	if k := kind(raw); k != "an object" {
		return nil, fmt.Errorf("%w: a tool must be a JSON object, got %s", ErrField, k)
	}
	if !json.Valid(raw) {
		var v any
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, json.Unmarshal(raw, &v))
	}
	var w toolFields
	jsonscan.Members(raw, func(key string, val []byte) bool {
		switch key {
		case "name":
			w.name = val
		case "title":
			w.title = val
		case "description":
			w.description = val
		case "inputSchema":
			w.inputSchema = val
		case "outputSchema":
			w.outputSchema = val
		case "annotations":
			w.annotations = val
		case "_meta":
			w.meta = val
		}
		return true
	})
	t := &Tool{Server: server, Raw: raw}
	if absent(w.name) {
		return nil, fmt.Errorf("%w: the tool has no \"name\"; every MCP tool needs a non-empty name", ErrToolName)
	}
	if kind(w.name) != "a string" {
		return nil, fmt.Errorf("%w: \"name\" must be a string, got %s", ErrToolName, kind(w.name))
	}
	t.Name = jsonscan.Unquote(w.name)
	if strings.TrimSpace(t.Name) == "" {
		return t, fmt.Errorf("%w: \"name\" is empty; every MCP tool needs a non-empty name", ErrToolName)
	}

	var err error
	if t.Description, err = optionalString("description", w.description); err != nil {
		return t, err
	}
	if t.Title, err = optionalString("title", w.title); err != nil {
		return t, err
	}
	// MCP requires inputSchema, but some servers omit it for tools without parameters.
	// Nothing came in, so nothing is stored: Definition and the gateway send
	// {"type":"object"} in its place.
	if !absent(w.inputSchema) {
		if err := checkSchema("inputSchema", w.inputSchema); err != nil {
			return t, err
		}
		t.InputSchema = w.inputSchema
		jsonscan.Members(w.inputSchema, func(key string, val []byte) bool {
			if key == "required" && kind(val) == "an array" {
				jsonscan.Elements(val, func(v []byte) {
					if kind(v) == "a string" {
						t.Required = append(t.Required, jsonscan.Unquote(v))
					}
				})
			}
			return true
		})
		t.Params = paramsOf(w.inputSchema, "", 0, t.Required, nil)
	}
	if !absent(w.outputSchema) {
		if err := checkSchema("outputSchema", w.outputSchema); err != nil {
			return t, err
		}
		t.OutputSchema = w.outputSchema
	}
	if !absent(w.annotations) {
		if k := kind(w.annotations); k != "an object" {
			return t, fmt.Errorf("%w: \"annotations\" must be an object, got %s", ErrField, k)
		}
		t.Annotations = w.annotations
		if t.Title == "" {
			jsonscan.Members(w.annotations, func(key string, val []byte) bool {
				if key == "title" && kind(val) == "a string" {
					t.Title = jsonscan.Unquote(val)
				}
				return true
			})
		}
	}
	if !absent(w.meta) {
		if k := kind(w.meta); k != "an object" {
			return t, fmt.Errorf("%w: \"_meta\" must be an object, got %s", ErrField, k)
		}
		t.Meta = w.meta
		jsonscan.Members(w.meta, func(key string, val []byte) bool {
			if key == "anthropic/alwaysLoad" {
				t.Pinned = string(val) == "true"
			}
			return true
		})
	}
	return t, nil
}

// checkSchema checks a tool's input or output schema, which MCP requires to be a JSON
// Schema object describing an object.
func checkSchema(field string, raw json.RawMessage) error {
	if k := kind(raw); k != "an object" {
		return fmt.Errorf("%w: %q must be a JSON Schema object, got %s", ErrSchema, field, k)
	}
	var err error
	jsonscan.Members(raw, func(key string, val []byte) bool {
		if key == "type" && jsonscan.Unquote(val) != "object" {
			err = fmt.Errorf("%w: %q must describe an object (\"type\": \"object\"), got \"type\": %s", ErrSchema, field, val)
		}
		return true
	})
	return err
}

func optionalString(field string, raw json.RawMessage) (string, error) {
	if absent(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %q must be a string, got %s", ErrField, field, kind(raw))
	}
	return s, nil
}

// paramsOf lists the properties of an object schema in document order, descending into
// nested objects and arrays of objects up to maxParamDepth.
func paramsOf(schema []byte, prefix string, depth int, required []string, out []Param) []Param {
	jsonscan.Members(schema, func(key string, props []byte) bool {
		if key != "properties" || kind(props) != "an object" {
			return true
		}
		jsonscan.Members(props, func(name string, prop []byte) bool {
			p := Param{Name: prefix + name, Depth: depth}
			for _, r := range required {
				if r == name {
					p.Required = true
				}
			}
			var title string
			var items []byte
			jsonscan.Members(prop, func(k string, v []byte) bool {
				switch k {
				case "description":
					p.Description = jsonscan.Unquote(v)
				case "title":
					title = jsonscan.Unquote(v)
				case "items":
					items = v
				case "enum":
					p.Enum = appendEnum(p.Enum, v)
				}
				return true
			})
			// An array of enum values accepts the same words: {"type": "array",
			// "items": {"enum": [...]}}.
			jsonscan.Members(items, func(k string, v []byte) bool {
				if k == "enum" {
					p.Enum = appendEnum(p.Enum, v)
				}
				return true
			})
			if p.Description == "" {
				p.Description = title
			}
			out = append(out, p)
			if depth+1 < maxParamDepth {
				out = paramsOf(prop, p.Name+".", depth+1, nil, out)
				if kind(items) == "an object" {
					out = paramsOf(items, p.Name+".", depth+1, nil, out)
				}
			}
			return true
		})
		return true
	})
	return out
}

// appendEnum appends to dst the string values of the JSON array v, up to MaxEnumValues
// in all; other values (numbers, null) and empty strings say nothing and are skipped.
func appendEnum(dst []string, v []byte) []string {
	jsonscan.Elements(v, func(e []byte) {
		if s := jsonscan.Unquote(e); s != "" && len(dst) < MaxEnumValues {
			dst = append(dst, s)
		}
	})
	return dst
}

// absent reports a member that is missing or null.
func absent(raw json.RawMessage) bool {
	return len(raw) == 0 || isNull(raw)
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// kind names the JSON type of raw for error messages.
func kind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
