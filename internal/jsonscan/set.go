package jsonscan

import (
	"bytes"
	"encoding/json"
)

// Member is one member of a JSON object: its key and the bytes of its value.
type Member struct {
	Key   string
	Value json.RawMessage
}

// SetMembers returns the object obj with each of members set: a member obj already has
// gets the new value in its place (every occurrence, if the key is repeated); the others
// are appended in order. All other bytes stay as they are. obj must be a valid JSON
// object.
func SetMembers(obj []byte, members ...Member) []byte {
	out := make([]byte, 0, len(obj)+64)
	found := make([]bool, len(members))
	prev, count := 0, 0
	MemberSpans(obj, func(key string, start, end int) {
		count++
		for i, m := range members {
			if m.Key == key {
				out = append(out, obj[prev:start]...)
				out = append(out, m.Value...)
				prev, found[i] = end, true
				break
			}
		}
	})
	closing := bytes.LastIndexByte(obj, '}')
	if closing < prev {
		return obj // not an object: leave it alone
	}
	// Added members go right after the last member (or the opening brace), before
	// any space in front of the closing brace.
	tail := closing
	for tail > prev && isJSONSpace(obj[tail-1]) {
		tail--
	}
	out = append(out, obj[prev:tail]...)
	for i, m := range members {
		if found[i] {
			continue
		}
		if count > 0 {
			out = append(out, ',')
		}
		key, _ := json.Marshal(m.Key)
		out = append(out, key...)
		out = append(out, ':')
		out = append(out, m.Value...)
		count++
	}
	return append(out, obj[tail:]...)
}

// MemberSpans calls fn with the key of each member of the object obj and the offsets
// of its value, in document order.
func MemberSpans(obj []byte, fn func(key string, start, end int)) {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = SkipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return
		}
		if obj[i] == ',' {
			i++
			continue
		}
		kend := SkipValue(obj, i)
		if kend <= i {
			return
		}
		key := Unquote(obj[i:kend])
		i = SkipSpace(obj, kend)
		if i < len(obj) && obj[i] == ':' {
			i++
		}
		i = SkipSpace(obj, i)
		vend := SkipValue(obj, i)
		if vend <= i {
			return
		}
		fn(key, i, vend)
		i = vend
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }
