package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

// A request with a thousand tools is a megabyte of JSON, and encoding/json validates
// every nested value again each time it calls an UnmarshalJSON method: decoding a
// Request, its Tools and its Blocks that way took tens of milliseconds. json.Unmarshal
// validates the whole document once before it calls Request.UnmarshalJSON, so the
// decoders here walk the valid bytes with jsonscan instead, keeping every value's bytes
// as received. Each error names the member that is wrong, as the API does
// ("messages.0.content.1.type: ...").

// UnmarshalJSON decodes a request. Members toolshed does not read go to Extra.
func (r *Request) UnmarshalJSON(data []byte) error {
	*r = Request{}
	// Values are kept, and encoding/json may reuse data.
	return eachMember(bytes.Clone(data), "the request", "an object", r.member)
}

// member decodes one member of a request.
func (r *Request) member(key string, v []byte) error {
	if isNull(v) {
		return nil
	}
	var err error
	switch key {
	case "model":
		r.Model, err = str("model", v)
	case "max_tokens":
		r.MaxTokens, err = integer("max_tokens", v)
	case "system":
		r.System = v
	case "messages":
		r.Messages = nil
		err = eachElement(v, "messages", "a list of messages", func(where string, e []byte) error {
			var m Message
			err := m.decode(where, e)
			r.Messages = append(r.Messages, m)
			return err
		})
	case "tools":
		r.Tools = nil
		err = eachElement(v, "tools", "a list of tools", func(where string, e []byte) error {
			var t Tool
			err := t.decode(where, e)
			r.Tools = append(r.Tools, t)
			return err
		})
	case "tool_choice":
		r.ToolChoice = v
	case "stream":
		r.Stream, err = boolean("stream", v)
	default:
		if r.Extra == nil {
			r.Extra = map[string]json.RawMessage{}
		}
		r.Extra[key] = v
	}
	return err
}

// eachElement calls fn for each element of the valid array v, with its path, until fn
// fails.
func eachElement(v []byte, where, what string, fn func(where string, e []byte) error) error {
	if err := expect(v, '[', where, what); err != nil {
		return err
	}
	var err error
	i := 0
	jsonscan.Elements(v, func(e []byte) {
		if err == nil {
			err = fn(fmt.Sprintf("%s.%d", where, i), e)
		}
		i++
	})
	return err
}

// decodeRequest decodes a request body as json.Unmarshal into a Request does, but when
// its tools are, byte for byte, those of a recent request, it reuses their decoded and
// validated form without reading them again: a client sends the same tools with every
// request, and a thousand tools are a megabyte of JSON. The body's structure is checked
// here and every other value with json.Valid, so the body is validated whole.
func (p *Proxy) decodeRequest(body []byte) (*Request, error) {
	r := &Request{}
	err := walk(body, func(key string, rest []byte) (int, error) {
		if key == "tools" {
			if ts := p.toolSets.match(rest); ts != nil {
				// A complete JSON value that starts rest is the value there.
				r.Tools, r.toolSet = ts.tools, ts
				return len(ts.raw), nil
			}
		}
		v := rest[:jsonscan.SkipValue(rest, 0)]
		if len(v) == 0 || !json.Valid(v) {
			return 0, errSyntax
		}
		if key == "tools" {
			r.toolsRaw = v
		}
		return len(v), r.member(key, v)
	})
	if errors.Is(err, errSyntax) {
		var v any
		if jerr := json.Unmarshal(body, &v); jerr != nil {
			return nil, jerr
		}
	}
	return r, err
}

var errSyntax = errors.New("not valid JSON")

// walk checks the structure of the object b, which must be all of b but for space, and
// calls fn with each member's key and the bytes from its value on; fn returns the
// length of the value, whose validity it checks. Structural faults are errSyntax.
func walk(b []byte, fn func(key string, rest []byte) (int, error)) error {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return fmt.Errorf("the request: must be a JSON object, got %s", excerpt(b[i:]))
	}
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return errSyntax
			}
			end := jsonscan.SkipValue(b, i)
			if !json.Valid(b[i:end]) {
				return errSyntax
			}
			key := jsonscan.Unquote(b[i:end])
			i = jsonscan.SkipSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return errSyntax
			}
			i = jsonscan.SkipSpace(b, i+1)
			n, err := fn(key, b[i:])
			if err != nil {
				return err
			}
			i = jsonscan.SkipSpace(b, i+n)
			if i < len(b) && b[i] == ',' {
				i = jsonscan.SkipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return errSyntax
		}
	}
	if jsonscan.SkipSpace(b, i) != len(b) {
		return errSyntax
	}
	return nil
}

// UnmarshalJSON decodes a message; a string content is one text block.
func (m *Message) UnmarshalJSON(data []byte) error {
	return m.decode("message", bytes.Clone(data))
}

func (m *Message) decode(where string, b []byte) error {
	*m = Message{Raw: b}
	return eachMember(b, where, "an object with a role and content", func(key string, v []byte) (err error) {
		switch key {
		case "role":
			m.Role, err = str(where+".role", v)
		case "content":
			m.Content, err = scanContent(where+".content", v)
		}
		return err
	})
}

// eachMember calls fn for each member of the valid object v whose value is not null,
// until fn fails.
func eachMember(v []byte, where, what string, fn func(key string, val []byte) error) error {
	if err := expect(v, '{', where, what); err != nil {
		return err
	}
	var err error
	jsonscan.Members(v, func(key string, val []byte) bool {
		if !isNull(val) {
			err = fn(key, val)
		}
		return err == nil
	})
	return err
}

// decodeContent reads a content value that may not have been validated: a string (one
// text block) or a list of blocks.
func decodeContent(raw json.RawMessage) ([]Block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && !json.Valid(raw) {
		var v any
		return nil, json.Unmarshal(raw, &v)
	}
	return scanContent("content", raw)
}

// scanContent reads a valid content value.
func scanContent(where string, raw []byte) ([]Block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		return []Block{TextBlock(jsonscan.Unquote(raw))}, nil
	}
	var blocks []Block
	err := eachElement(raw, where, "a string or a list of content blocks", func(where string, e []byte) error {
		var b Block
		err := b.decode(where, e)
		blocks = append(blocks, b)
		return err
	})
	return blocks, err
}

// UnmarshalJSON decodes a content block and keeps its bytes in Raw.
func (b *Block) UnmarshalJSON(data []byte) error {
	return b.decode("content block", bytes.Clone(data))
}

func (b *Block) decode(where string, v []byte) error {
	*b = Block{Raw: v}
	err := eachMember(v, where, "a content block object", func(key string, val []byte) (err error) {
		switch key {
		case "type":
			b.Type, err = str(where+".type", val)
		case "text":
			b.Text, err = str(where+".text", val)
		case "id":
			b.ID, err = str(where+".id", val)
		case "name":
			b.Name, err = str(where+".name", val)
		case "input":
			b.Input = val
		case "tool_use_id":
			b.ToolUseID, err = str(where+".tool_use_id", val)
		case "content":
			b.Content = val
		case "is_error":
			b.IsError, err = boolean(where+".is_error", val)
		case "tool_name":
			b.ToolName, err = str(where+".tool_name", val)
		}
		return err
	})
	if err == nil && b.Type == "" {
		err = fmt.Errorf("%s.type: Field required", where)
	}
	return err
}

// UnmarshalJSON decodes a tool and keeps its bytes in Raw.
func (t *Tool) UnmarshalJSON(data []byte) error {
	return t.decode("tool", bytes.Clone(data))
}

func (t *Tool) decode(where string, v []byte) error {
	*t = Tool{Raw: v}
	return eachMember(v, where, "a tool object", func(key string, val []byte) (err error) {
		switch key {
		case "type":
			t.Type, err = str(where+".type", val)
		case "name":
			t.Name, err = str(where+".name", val)
		case "description":
			t.Description, err = str(where+".description", val)
		case "input_schema":
			t.InputSchema = val
		case "defer_loading":
			t.DeferLoading, err = boolean(where+".defer_loading", val)
		case "cache_control":
			t.CacheControl = val
		}
		return err
	})
}

func isNull(v []byte) bool { return string(v) == "null" }

// expect checks that v starts with open ('{' or '[').
func expect(v []byte, open byte, where, what string) error {
	v = v[jsonscan.SkipSpace(v, 0):]
	if len(v) == 0 || v[0] != open {
		return fmt.Errorf("%s: must be %s, got %s", where, what, excerpt(v))
	}
	return nil
}

func str(where string, v []byte) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		return "", fmt.Errorf("%s: must be a string, got %s", where, excerpt(v))
	}
	return jsonscan.Unquote(v), nil
}

func boolean(where string, v []byte) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s: must be true or false, got %s", where, excerpt(v))
}

func integer(where string, v []byte) (int, error) {
	n, err := strconv.Atoi(string(v))
	if err != nil {
		// 1024.0 and 1e3 are whole numbers too.
		f, ferr := strconv.ParseFloat(string(v), 64)
		if ferr != nil || f != float64(int(f)) {
			return 0, fmt.Errorf("%s: must be a whole number, got %s", where, excerpt(v))
		}
		n = int(f)
	}
	return n, nil
}

// excerpt is the start of a JSON value, for error messages.
func excerpt(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	if len(v) > 40 {
		return string(v[:40]) + "..."
	}
	return string(v)
}
