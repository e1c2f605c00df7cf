package messages

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The encoders here write a request by appending the bytes of its tools and blocks as
// received, which are valid JSON already: encoding/json would compact and re-validate
// every one of them, which costs more than the rest of the proxy's work on a request.
// Upstreams send req.MarshalJSON() as it is.

// MarshalJSON encodes a request: its members in the API's order, then Extra's in key
// order, each with its bytes as received.
func (r Request) MarshalJSON() ([]byte, error) { return r.appendJSON(false, nil) }

// countTokensJSON encodes a request as a count_tokens body: without max_tokens and
// stream, and with the members of Extra that keep accepts (all when keep is nil).
func (r Request) countTokensJSON(keep func(key string) bool) ([]byte, error) {
	return r.appendJSON(true, keep)
}

func (r Request) appendJSON(countTokens bool, keep func(key string) bool) ([]byte, error) {
	b := make([]byte, 0, 4096)
	b = append(b, `{"model":`...)
	b = appendString(b, r.Model)
	if !countTokens {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(r.MaxTokens), 10)
	}
	if len(r.System) > 0 {
		b = append(append(b, `,"system":`...), r.System...)
	}
	b = append(b, `,"messages":[`...)
	var err error
	for i, m := range r.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = m.appendJSON(b); err != nil {
			return nil, err
		}
	}
	b = append(b, ']')
	if len(r.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range r.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = t.appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(r.ToolChoice) > 0 {
		b = append(append(b, `,"tool_choice":`...), r.ToolChoice...)
	}
	if r.Stream && !countTokens {
		b = append(b, `,"stream":true`...)
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		if keep == nil || keep(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = append(appendString(append(b, ','), k), ':')
		b = append(b, r.Extra[k]...)
	}
	return append(b, '}'), nil
}

// MarshalJSON encodes a message: Raw when it has one, else its role and its content as
// a list of blocks.
func (m Message) MarshalJSON() ([]byte, error) { return m.appendJSON(nil) }

func (m Message) appendJSON(b []byte) ([]byte, error) {
	if len(m.Raw) > 0 {
		return append(b, m.Raw...), nil
	}
	b = append(b, `{"role":`...)
	b = appendString(b, m.Role)
	b = append(b, `,"content":[`...)
	for i, blk := range m.Content {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = blk.appendJSON(b); err != nil {
			return nil, err
		}
	}
	return append(b, "]}"...), nil
}

// MarshalJSON encodes a block: Raw when it has one.
func (b Block) MarshalJSON() ([]byte, error) { return b.appendJSON(nil) }

func (b Block) appendJSON(dst []byte) ([]byte, error) {
	if len(b.Raw) > 0 {
		return append(dst, b.Raw...), nil
	}
	type plain Block
	enc, err := json.Marshal(plain(b))
	return append(dst, enc...), err
}

// MarshalJSON encodes a tool: Raw when it has one.
func (t Tool) MarshalJSON() ([]byte, error) { return t.appendJSON(nil) }

func (t Tool) appendJSON(dst []byte) ([]byte, error) {
	if len(t.Raw) > 0 {
		return append(dst, t.Raw...), nil
	}
	type plain Tool
	enc, err := json.Marshal(plain(t))
	return append(dst, enc...), err
}

// appendString appends s as a JSON string, escaped as encoding/json escapes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			enc, _ := json.Marshal(s)
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
