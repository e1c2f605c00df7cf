package bridge

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

// Checking a call's arguments with the full validator means decoding them into Go values
// and walking the compiled schema: 8 µs in a warm benchmark, up to 25 µs of a gateway's
// CPU per call in its profiles. Most tools' schemas (427 of the 478 built-in tools) use
// only a few keywords: types, properties, required, enums of strings, simple bounds,
// lengths. quickSchema checks arguments against such a schema on their bytes, without
// decoding them, and answers only "certainly valid": anything it is not sure of (a
// violation, a number it would have to parse with care, a duplicate key, a keyword it
// does not know) goes to the full validator, which has the last word and writes the
// error. So a quick check can make a call faster but never changes its outcome
// (FuzzQuickAgreesWithValidator, TestQuickAgreesOnGeneratedSchemas).

// quickSchema is a schema, or a subschema, made only of keywords quickSchema knows.
type quickSchema struct {
	types    uint8                   // allowed JSON types (quickString…); 0 means any
	props    map[string]*quickSchema // "properties"
	required []string
	noExtra  bool         // "additionalProperties": false
	extra    *quickSchema // "additionalProperties" as a schema
	items    *quickSchema // "items" as one schema, for every element
	enum     []string     // "enum", when every value is a string
	hasEnum  bool
	// Bounds, -1 (or nil) when absent: lengths count code points, as JSON Schema does.
	minLen, maxLen, minItems, maxItems int
	// Numeric bounds, integers only: an instance must be an integer written in at most
	// 16 bytes (sign included) to be compared with them, so the comparison is exact.
	min, max, exclMin, exclMax *int64
}

const (
	quickString  uint8 = 1 << iota
	quickNumber        // any number
	quickInteger       // an integer; quickNumber covers it too
	quickBoolean
	quickNull
	quickObject
	quickArray
)

var quickTypes = map[string]uint8{
	"string": quickString, "number": quickNumber, "integer": quickInteger,
	"boolean": quickBoolean, "null": quickNull, "object": quickObject, "array": quickArray,
}

// quickAnnotations are keywords that never make an instance invalid.
var quickAnnotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// quickDrafts are the dialects whose meaning of every keyword above is the same (draft 4
// and earlier differ: a boolean exclusiveMinimum, "required" inside properties).
var quickDrafts = map[string]bool{
	"http://json-schema.org/draft-06/schema#":      true,
	"http://json-schema.org/draft-06/schema":       true,
	"http://json-schema.org/draft-07/schema#":      true,
	"http://json-schema.org/draft-07/schema":       true,
	"https://json-schema.org/draft/2019-09/schema": true,
	"https://json-schema.org/draft/2020-12/schema": true,
}

// compileQuick returns the quick form of an input schema, or nil when the schema uses a
// keyword, or a form of one, that quickSchema does not know.
func compileQuick(raw []byte) *quickSchema {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || doc == nil {
		return nil
	}
	if d, ok := doc["$schema"]; ok {
		var s string
		if json.Unmarshal(d, &s) != nil || !quickDrafts[s] {
			return nil
		}
		delete(doc, "$schema")
	}
	return quickFrom(doc)
}

// quickSub compiles a subschema: an object, or true (anything).
func quickSub(raw json.RawMessage) *quickSchema {
	if t := bytes.TrimSpace(raw); string(t) == "true" {
		return &quickSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || doc == nil {
		return nil
	}
	return quickFrom(doc)
}

// quickFrom compiles a schema object. Every keyword's value is checked for the JSON type
// it must have: encoding/json reads a null into a map as nil and into a string as
// nothing at all, so {"enum":["x",null]} would otherwise read as an enum holding "".
func quickFrom(doc map[string]json.RawMessage) *quickSchema {
	q := &quickSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	for k, v := range doc {
		ok := true
		switch k {
		case "type":
			ok = q.setTypes(v)
		case "properties":
			var props map[string]json.RawMessage
			if ok = json.Unmarshal(v, &props) == nil && props != nil; ok {
				q.props = make(map[string]*quickSchema, len(props))
				for name, p := range props {
					if q.props[name] = quickSub(p); q.props[name] == nil {
						return nil
					}
				}
			}
		case "required":
			q.required, ok = quickStrings(v)
		case "additionalProperties":
			if t := bytes.TrimSpace(v); string(t) == "false" {
				q.noExtra = true
			} else {
				q.extra = quickSub(v)
				ok = q.extra != nil
			}
		case "items":
			q.items = quickSub(v)
			ok = q.items != nil
		case "enum":
			q.enum, ok = quickStrings(v)
			q.hasEnum = true
		case "minLength":
			q.minLen, ok = quickCount(v)
		case "maxLength":
			q.maxLen, ok = quickCount(v)
		case "minItems":
			q.minItems, ok = quickCount(v)
		case "maxItems":
			q.maxItems, ok = quickCount(v)
		case "minimum":
			q.min, ok = quickBound(v)
		case "maximum":
			q.max, ok = quickBound(v)
		case "exclusiveMinimum":
			q.exclMin, ok = quickBound(v)
		case "exclusiveMaximum":
			q.exclMax, ok = quickBound(v)
		default:
			ok = quickAnnotations[k]
		}
		if !ok {
			return nil
		}
	}
	return q
}

func (q *quickSchema) setTypes(v json.RawMessage) bool {
	var names []string
	if json.Unmarshal(v, &names) != nil {
		var one string
		if json.Unmarshal(v, &one) != nil {
			return false
		}
		names = []string{one}
	}
	for _, n := range names {
		t, ok := quickTypes[n]
		if !ok {
			return false
		}
		q.types |= t
	}
	return q.types != 0
}

// quickStrings reads an array of strings, and nothing else: not null, nor an array
// holding a null.
func quickStrings(v json.RawMessage) ([]string, bool) {
	var raw []json.RawMessage
	if json.Unmarshal(v, &raw) != nil || raw == nil {
		return nil, false
	}
	out := make([]string, len(raw))
	for i, r := range raw {
		if r[0] != '"' || json.Unmarshal(r, &out[i]) != nil {
			return nil, false
		}
	}
	return out, true
}

// quickCount reads a non-negative count such as minLength.
func quickCount(v json.RawMessage) (int, bool) {
	n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
	return n, err == nil && n >= 0
}

// quickBound reads a numeric bound that is an integer a float64 holds exactly.
func quickBound(v json.RawMessage) (*int64, bool) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return nil, false
	}
	return &n, true
}

// valid reports whether the JSON value v certainly matches q; false means "not sure".
// v is valid JSON (the caller checked it).
func (q *quickSchema) valid(v []byte) bool {
	switch v[0] {
	case '"':
		return q.validString(v)
	case '{':
		return q.is(quickObject) && q.validObject(v)
	case '[':
		return q.is(quickArray) && q.validArray(v)
	case 't', 'f':
		return q.is(quickBoolean) && !q.hasEnum
	case 'n':
		return q.is(quickNull) && !q.hasEnum
	default:
		return q.validNumber(v)
	}
}

func (q *quickSchema) is(t uint8) bool { return q.types == 0 || q.types&t != 0 }

func (q *quickSchema) validString(v []byte) bool {
	if !q.is(quickString) {
		return false
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner) {
		// Escapes: compare and count the decoded string, as the full validator does.
		if !q.hasEnum && q.minLen < 0 && q.maxLen < 0 {
			return true
		}
		return false
	}
	if q.hasEnum {
		if !slices.Contains(q.enum, string(inner)) {
			return false
		}
	}
	if q.minLen >= 0 || q.maxLen >= 0 {
		n := utf8.RuneCount(inner)
		if (q.minLen >= 0 && n < q.minLen) || (q.maxLen >= 0 && n > q.maxLen) {
			return false
		}
	}
	return true
}

func (q *quickSchema) validNumber(v []byte) bool {
	if q.hasEnum {
		return false
	}
	integer := bytes.IndexAny(v, ".eE") < 0
	switch {
	case q.types == 0 || q.types&quickNumber != 0:
	case q.types&quickInteger != 0 && integer:
	default:
		return false // not a number type, or an integer written as 1.0 or 1e2: not sure
	}
	if q.min == nil && q.max == nil && q.exclMin == nil && q.exclMax == nil {
		return true
	}
	if !integer || len(v) > 16 {
		return false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return false
	}
	return (q.min == nil || n >= *q.min) && (q.max == nil || n <= *q.max) &&
		(q.exclMin == nil || n > *q.exclMin) && (q.exclMax == nil || n < *q.exclMax)
}

func (q *quickSchema) validArray(v []byte) bool {
	if q.hasEnum {
		return false
	}
	n, ok := 0, true
	jsonscan.Elements(v, func(e []byte) {
		n++
		if ok && q.items != nil {
			ok = q.items.valid(e)
		}
	})
	return ok && (q.minItems < 0 || n >= q.minItems) && (q.maxItems < 0 || n <= q.maxItems)
}

// maxQuickMembers bounds the members of an object checked quickly, so that looking for
// duplicate keys stays cheap.
const maxQuickMembers = 64

func (q *quickSchema) validObject(v []byte) bool {
	if q.hasEnum {
		return false
	}
	var seenBuf [16]string
	seen := seenBuf[:0]
	ok := true
	jsonscan.Members(v, func(key string, val []byte) bool {
		if len(seen) == maxQuickMembers {
			ok = false // many members: the full validator has no quadratic duplicate check
			return false
		}
		if slices.Contains(seen, key) {
			ok = false // a duplicate key: which value counts is the decoder's business
			return false
		}
		seen = append(seen, key)
		if p, known := q.props[key]; known {
			ok = p.valid(val)
		} else if q.noExtra {
			ok = false
		} else if q.extra != nil {
			ok = q.extra.valid(val)
		}
		return ok
	})
	if !ok {
		return false
	}
	for _, r := range q.required {
		if !slices.Contains(seen, r) {
			return false
		}
	}
	return true
}
