package bridge

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// quickGen writes schemas made only of the keywords quickSchema knows, and arguments near
// their edges (bounds, escapes, integers written as 1.0, keys that decode alike), so that
// a differential test spends its time where the quick check and the full validator could
// disagree, rather than on schemas that have no quick form.
type quickGen struct{ r *rand.Rand }

// quickNames are property names and string values: some decode alike from different
// bytes ("a" and "\u0061", "é" and "\u00e9", invalid UTF-8 and U+FFFD).
var quickNames = []string{`a`, `b`, `é`, ``, `ab`, `\u0061`, `\u00e9`, "\xff", `\ufffd`, "\xef\xbf\xbd", `a\"`, `\ud800`, `abc`, `\/`, `/`, `\n`, `\\`}

func (g quickGen) pick(s []string) string { return s[g.r.IntN(len(s))] }

func (g quickGen) str() string { return `"` + g.pick(quickNames) + `"` }

func (g quickGen) schema(depth int, root bool) string {
	if !root && g.r.IntN(8) == 0 {
		return "true"
	}
	var kw []string
	add := func(k, v string) { kw = append(kw, strconv.Quote(k)+":"+v) }
	if root && g.r.IntN(3) == 0 {
		add("$schema", g.pick([]string{`"http://json-schema.org/draft-06/schema#"`, `"http://json-schema.org/draft-07/schema#"`,
			`"http://json-schema.org/draft-07/schema"`, `"https://json-schema.org/draft/2019-09/schema"`, `"https://json-schema.org/draft/2020-12/schema"`}))
	}
	if g.r.IntN(3) != 0 {
		types := []string{`"string"`, `"number"`, `"integer"`, `"boolean"`, `"null"`, `"object"`, `"array"`}
		if g.r.IntN(2) == 0 {
			add("type", g.pick(types))
		} else {
			g.r.Shuffle(len(types), func(i, j int) { types[i], types[j] = types[j], types[i] })
			add("type", "["+strings.Join(types[:1+g.r.IntN(3)], ",")+"]")
		}
	}
	if depth > 0 && g.r.IntN(2) == 0 {
		var props []string
		for range g.r.IntN(4) {
			props = append(props, g.str()+":"+g.schema(depth-1, false))
		}
		add("properties", "{"+strings.Join(props, ",")+"}")
	}
	if g.r.IntN(3) == 0 {
		seen := map[string]bool{}
		var req []string
		for range g.r.IntN(3) {
			if s := g.str(); !seen[s] {
				seen[s] = true
				req = append(req, s)
			}
		}
		add("required", "["+strings.Join(req, ",")+"]")
	}
	if depth > 0 && g.r.IntN(4) == 0 {
		switch g.r.IntN(3) {
		case 0:
			add("additionalProperties", "false")
		case 1:
			add("additionalProperties", "true")
		default:
			add("additionalProperties", g.schema(depth-1, false))
		}
	}
	if depth > 0 && g.r.IntN(4) == 0 {
		add("items", g.schema(depth-1, false))
	}
	if g.r.IntN(5) == 0 {
		var e []string
		for range 1 + g.r.IntN(3) {
			if g.r.IntN(8) == 0 {
				e = append(e, g.pick([]string{"null", "1", "true", `""`}))
			} else {
				e = append(e, g.str())
			}
		}
		add("enum", "["+strings.Join(e, ",")+"]")
	}
	for _, k := range []string{"minLength", "maxLength", "minItems", "maxItems"} {
		if g.r.IntN(6) == 0 {
			add(k, strconv.Itoa(g.r.IntN(4)))
		}
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if g.r.IntN(6) == 0 {
			add(k, g.pick([]string{"-1", "0", "1", "2", "-0", "9007199254740992", "-9007199254740992"}))
		}
	}
	if g.r.IntN(6) == 0 {
		add(g.pick([]string{"description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}),
			g.pick([]string{`"x"`, `true`, `[1]`}))
	}
	return "{" + strings.Join(kw, ",") + "}"
}

func (g quickGen) space() string { return g.pick([]string{"", "", "", " ", "\n\t "}) }

// value writes a value for the schema s (decoded), near its edges.
func (g quickGen) value(s any, depth int, root bool) string {
	m, _ := s.(map[string]any)
	kind := g.r.IntN(7)
	if t, ok := m["type"].(string); ok && g.r.IntN(4) != 0 {
		kind = map[string]int{"string": 0, "number": 1, "integer": 1, "boolean": 2, "null": 3, "object": 4, "array": 5}[t]
	}
	if _, ok := m["enum"]; ok && g.r.IntN(4) != 0 {
		kind = 0
	}
	if root {
		kind = 4
	} else if depth <= 0 && kind >= 4 {
		kind = 0
	}
	switch kind {
	case 0:
		if e, ok := m["enum"].([]any); ok && g.r.IntN(3) != 0 {
			switch v := e[g.r.IntN(len(e))].(type) {
			case string:
				b, _ := json.Marshal(v)
				return string(b)
			default:
				return `""` // what a Go string holds when it reads a JSON null or number
			}
		}
		return `"` + strings.Repeat(g.pick(quickNames), g.r.IntN(3)) + `"`
	case 1:
		return g.pick([]string{"0", "-0", "1", "-1", "2", "3", "1.0", "1e0", "1E0", "0.5", "-1.5", "2e-1", "100",
			"9007199254740992", "9007199254740993", "-9007199254740993", "12345678901234567", "1e400", "-0.0", "1e1000001", "0.1e1", "10e-1", "-9007199254740992"})
	case 2:
		return g.pick([]string{"true", "false"})
	case 3:
		return "null"
	case 4:
		props, _ := m["properties"].(map[string]any)
		var names []string
		var known []string
		for k := range props {
			known = append(known, k)
		}
		slices.Sort(known) // map order would make a seed's case change from run to run
		for range g.r.IntN(4) {
			if len(known) > 0 && g.r.IntN(2) == 0 {
				b, _ := json.Marshal(known[g.r.IntN(len(known))])
				names = append(names, string(b[1:len(b)-1]))
			} else {
				names = append(names, g.pick(quickNames))
			}
		}
		if req, ok := m["required"].([]any); ok && g.r.IntN(2) == 0 {
			for _, r := range req {
				b, _ := json.Marshal(r)
				names = append(names, string(b[1:len(b)-1]))
			}
		}
		if g.r.IntN(10) == 0 { // many members
			for i := range 70 {
				names = append(names, "k"+strconv.Itoa(i))
			}
		}
		var mem []string
		for _, n := range names {
			var sub any
			if props != nil {
				// The member's schema, whichever way its name is written.
				var dec string
				if json.Unmarshal([]byte(`"`+n+`"`), &dec) == nil {
					sub = props[dec]
				}
			}
			if sub == nil {
				sub = m["additionalProperties"]
			}
			mem = append(mem, g.space()+`"`+n+`"`+g.space()+":"+g.space()+g.value(sub, depth-1, false))
		}
		return "{" + strings.Join(mem, ",") + g.space() + "}"
	default:
		var el []string
		for range g.r.IntN(5) {
			el = append(el, g.space()+g.value(m["items"], depth-1, false))
		}
		return "[" + strings.Join(el, ",") + "]"
	}
}

// quickDiff checks one generated schema and a few arguments; it reports a disagreement.
// It returns how many arguments the quick check proved valid and the full validator checked.
func quickDiff(t testing.TB, seed uint64) (checked int) {
	g := quickGen{rand.New(rand.NewPCG(seed, seed>>7))}
	schema := g.schema(3, true)
	q := compileQuick([]byte(schema))
	if q == nil {
		return 0
	}
	var s any
	if json.Unmarshal([]byte(schema), &s) != nil {
		t.Fatalf("generated schema %s is not JSON", schema)
	}
	for range 8 {
		args := g.value(s, 4, true)
		if !json.Valid([]byte(args)) || args[0] != '{' || !q.valid([]byte(args)) {
			continue
		}
		valid, ok := fullVerdict(t, []byte(schema), []byte(args))
		if ok {
			checked++
		}
		if ok && !valid {
			t.Errorf("quick check proves %s valid against %s; the full validator rejects it", args, schema)
		}
	}
	return checked
}

// TestQuickAgreesOnGeneratedSchemas runs the differential check on many generated schemas
// with fixed seeds, so that every run of the tests checks the same cases.
func TestQuickAgreesOnGeneratedSchemas(t *testing.T) {
	n := uint64(3000)
	if testing.Short() {
		n = 300
	}
	checked := 0
	for seed := range n {
		checked += quickDiff(t, seed)
	}
	// A generator that stopped making schemas with a quick form, or arguments the quick
	// check accepts, would test nothing.
	if checked < int(n) {
		t.Errorf("only %d arguments proved valid by the quick check were compared, want at least %d", checked, n)
	}
	t.Logf("%d arguments compared", checked)
}

// FuzzQuickGenerated lets the fuzzer choose the generator's seed.
func FuzzQuickGenerated(f *testing.F) {
	f.Add(make([]byte, 8))
	f.Fuzz(func(t *testing.T, b []byte) {
		var seed [8]byte
		copy(seed[:], b)
		quickDiff(t, binary.LittleEndian.Uint64(seed[:])^uint64(len(b))<<56)
	})
}

// TestQuickAgreesOnCraftedCases holds the cases an attacker would try first: keys and
// keywords written with escapes, keys that decode alike, invalid UTF-8, bounds at their
// edges, draft 4 named in an escaped $schema. The quick check may answer "not sure" to
// any of them, but never "valid" where the full validator says invalid.
func TestQuickAgreesOnCraftedCases(t *testing.T) {
	for _, tt := range []struct{ schema, args string }{
		{`{"\u0024schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"minimum":0,"exclusiveMinimum":true}}}`, `{"n":0}`},
		{`{"properties":{"a":{"type":"string"},"\u0061":{"type":"integer"}}}`, `{"a":"x"}`},
		{`{"properties":{"a":{"\u0074ype":"integer"}}}`, `{"a":"x"}`},
		{`{"properties":{"a":{"type":"string"}}}`, `{"a":"x","\u0061":1}`},
		{`{"properties":{"a":{"type":"string"}}}`, `{"\u0061":1}`},
		{`{"properties":{"\ufffd":{"type":"string"}}}`, "{\"\xff\":\"x\",\"\xfe\":1}"},
		{`{"properties":{"\ufffd":{"type":"string"}}}`, "{\"\xff\":1}"},
		{`{"properties":{"\ud800":{"type":"string"}}}`, `{"\udfff":1}`},
		{`{"properties":{"é":{"maxLength":1}}}`, `{"\u00e9":"ab"}`},
		{`{"properties":{"s":{"maxLength":1}}}`, "{\"s\":\"\xff\xff\"}"},
		{`{"properties":{"s":{"enum":["\ufffd"]}}}`, "{\"s\":\"\xff\"}"},
		{`{"properties":{"s":{"enum":["\ufffd"]}}}`, `{"s":"\ud800\udc00"}`},
		{`{"properties":{"s":{"maxLength":0}}}`, `{"s":"\u0000"}`},
		{`{"required":["a"],"additionalProperties":false}`, `{"\u0061":1}`},
		{`{"properties":{"n":{"type":"integer","maximum":9007199254740992}}}`, `{"n":9007199254740993}`},
		{`{"properties":{"n":{"type":"integer","minimum":-9007199254740992}}}`, `{"n":-9007199254740993}`},
		{`{"properties":{"n":{"exclusiveMinimum":0}}}`, `{"n":-0}`},
		{`{"properties":{"n":{"exclusiveMaximum":0}}}`, `{"n":-0.0}`},
		{`{"properties":{"n":{"type":"integer","maximum":1}}}`, `{"n":1.0000000000000001}`},
		{`{"properties":{"n":{"type":"integer"}}}`, `{"n":1.5e0}`},
		{`{"properties":{"n":{"type":"integer"}}}`, `{"n":1e1000001}`},
		{`{"properties":{"n":{"type":"number","maximum":1}}}`, `{"n":1e1000001}`},
		{`{"properties":{"l":{"items":{"type":"string"},"maxItems":1}}}`, `{"l":[ "a" , "b" ]}`},
		{`{"properties":{"l":{"items":{"type":"string"}}}}`, `{"l":["a",[],"b"]}`},
		{`{"properties":{"o":{"properties":{"a":{"type":"string"}},"required":["b"]}}}`, `{"o":{"a":"x","c":{"b":1}}}`},
		{`{"additionalProperties":{"type":"string"}}`, `{"a":"x","b":"y\"","c":1}`},
		{`{"$schema":"http://json-schema.org/draft-06/schema#","properties":{"n":{"exclusiveMaximum":3}}}`, `{"n":3}`},
		{`{"$schema":"https://json-schema.org/draft/2019-09/schema","properties":{"l":{"items":{"type":"null"}}}}`, `{"l":[null,0]}`},
		{`{"properties":{"b":{"enum":["true"]}}}`, `{"b":true}`},
		{`{"properties":{"x":{"enum":[""]}}}`, `{"x":null}`},
	} {
		q := compileQuick([]byte(tt.schema))
		if q == nil || !q.valid([]byte(tt.args)) {
			continue
		}
		valid, ok := fullVerdict(t, []byte(tt.schema), []byte(tt.args))
		if !ok {
			t.Errorf("the full validator cannot compile %s", tt.schema)
		} else if !valid {
			t.Errorf("quick check proves %s valid against %s; the full validator rejects it", tt.args, tt.schema)
		}
	}
}
