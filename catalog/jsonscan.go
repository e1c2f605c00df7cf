package catalog

import (
	"encoding/json"
	"unicode/utf8"
)

// The functions here walk JSON that json.Valid has already accepted. They exist because
// loading a catalog means reading thousands of schemas, and encoding/json re-validates
// every nested value it is asked to decode; one validation pass plus this walk is several
// times faster, keeps keys exact (encoding/json's struct decoding ignores case) and keeps
// object members in document order.

// members calls fn for each member of the object at b, in document order, with the
// member's value bytes. It stops early when fn returns false. b must be a valid object.
func members(b []byte, fn func(key string, val []byte) bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == '}' {
			return
		}
		if b[i] == ',' {
			i++
			continue
		}
		end := skipString(b, i)
		key := unquote(b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ':' {
			i++
		}
		i = skipSpace(b, i)
		vend := skipValue(b, i)
		if !fn(key, b[i:vend]) {
			return
		}
		i = vend
	}
}

// elements calls fn for each element of the array at b. b must be a valid array.
func elements(b []byte, fn func(val []byte)) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == ']' {
			return
		}
		if b[i] == ',' {
			i++
			continue
		}
		end := skipValue(b, i)
		fn(b[i:end])
		i = end
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
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

// unquote decodes a JSON string token; it returns "" for anything else.
func unquote(tok []byte) string {
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
	if simple && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(tok, &s)
	return s
}
