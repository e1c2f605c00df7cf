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
