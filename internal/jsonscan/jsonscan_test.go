package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestSkipValue(t *testing.T) {
	cases := []string{
		`"a"`, `"a\"b"`, `"a\\"`, `"a\\\"b"`, `"\\\\"`, `""`, `"é\u00e9"`,
		`{}`, `[]`, `{"a":[1,2,{"b":"}"}],"c":"]"}`, `[{"x":"\"]"},"\\"]`,
		`123`, `-1.5e3`, `true`, `null`,
	}
	for _, c := range cases {
		b := []byte(c + ` , "next"`)
		if got := SkipValue(b, 0); got != len(c) {
			t.Errorf("SkipValue(%s) = %d, want %d", c, got, len(c))
		}
	}
}

func TestMembersAndElements(t *testing.T) {
	var keys []string
	var vals []string
	Members([]byte(` {"a" : 1, "b\"c":{"x":[1]}, "d":"e\\"} `), func(k string, v []byte) bool {
		keys = append(keys, k)
		vals = append(vals, string(v))
		return true
	})
	if want := []string{"a", `b"c`, "d"}; !equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	if want := []string{"1", `{"x":[1]}`, `"e\\"`}; !equal(vals, want) {
		t.Errorf("values %q, want %q", vals, want)
	}
	var elems []string
	Elements([]byte(`[ 1, "a,b" ,{"c":[2,3]}]`), func(v []byte) { elems = append(elems, string(v)) })
	if want := []string{"1", `"a,b"`, `{"c":[2,3]}`}; !equal(elems, want) {
		t.Errorf("elements %q, want %q", elems, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzSkipValue checks SkipValue against encoding/json on valid input, and that no input
// makes the walkers panic.
func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{"a":"b\\"}`, `[1,{"x":"\""}]`, `"\\\\\""`, `{"a":[{"b":{}}]}`, `{`, `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		Members(b, func(string, []byte) bool { return true })
		Elements(b, func([]byte) {})
		end := SkipValue(b, SkipSpace(b, 0))
		if !json.Valid(b) {
			return
		}
		trimmed := bytes.TrimRight(b, " \t\r\n")
		if end != len(trimmed) {
			t.Errorf("SkipValue(%q) = %d, want %d", b, end, len(trimmed))
		}
	})
}

// TestUnquoteKnownKeys: a key of the known set is returned without a copy, and every
// key, known or not, decodes as encoding/json decodes it.
func TestUnquoteKnownKeys(t *testing.T) {
	for _, tok := range []string{`"name"`, `"_meta"`, `"io.modelcontextprotocol/protocolVersion"`, `"properties"`,
		`"nam"`, `"names"`, `"na\u006de"`, `"\u00e9t\u00e9"`, `"été"`, `""`, `"a\"b"`} {
		var want string
		if err := json.Unmarshal([]byte(tok), &want); err != nil {
			t.Fatal(err)
		}
		if got := Unquote([]byte(tok)); got != want {
			t.Errorf("Unquote(%s) = %q, want %q", tok, got, want)
		}
	}
	for _, key := range []string{"name", "arguments", "_meta", "io.modelcontextprotocol/clientCapabilities", "properties"} {
		tok := []byte(`"` + key + `"`)
		if n := testing.AllocsPerRun(100, func() { Unquote(tok) }); n != 0 {
			t.Errorf("Unquote(%s) allocates %v times, want 0", tok, n)
		}
	}
	tok := []byte(`"someUnknownKey"`)
	if n := testing.AllocsPerRun(100, func() { Unquote(tok) }); n != 1 {
		t.Errorf("Unquote(%s) allocates %v times, want 1 (the test above would pass for any key)", tok, n)
	}
}
