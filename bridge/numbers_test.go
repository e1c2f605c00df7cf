package bridge

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
)

// TestValidateArgumentsHugeNumbers checks that numbers too large for the full validator
// to read cheaply (see maxNumberExponent) get a clear error that says where, rather than
// a panic (math/big gives up past an exponent of about a million, and the validator
// dereferences the nil it gets) or seconds of CPU (the cost grows with the exponent).
func TestValidateArgumentsHugeNumbers(t *testing.T) {
	tool := &catalog.Tool{Qualified: "t__bounded", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"n":{"type":"number","minimum":0},"m":{"multipleOf":2},"l":{"type":"array","items":{"maximum":5}}}}`)}
	long := "1" + strings.Repeat("0", maxNumberLength)
	for _, tt := range []struct {
		args, at string // at is "" when the arguments are valid
	}{
		{`{"n":1e1000001}`, "/n"},
		{`{"n":-1E+99999999999999999999}`, "/n"},
		{`{"m":1e-1000001}`, "/m"},
		{`{"l":[1,2,1e1000001]}`, "/l/2"},
		{`{"x":1e401}`, "/x"}, // whether or not a keyword compares it
		{`{"n":` + long + `}`, "/n"},
		{`{"a~/b":[1e-401]}`, "/a~0~1b/0"},
		{`{"n":1e400,"m":4,"l":[1,2e0,-5e-400]}`, ""},
		{`{"n":1e300,"m":4,"l":[1,2e0]}`, ""},
	} {
		t.Run(tt.args[:min(len(tt.args), 40)], func(t *testing.T) {
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("ValidateArguments(%s) panics: %v", tt.args, r)
					}
				}()
				return ValidateArguments(tool, json.RawMessage(tt.args))
			}()
			switch {
			case tt.at == "" && err != nil:
				t.Errorf("ValidateArguments(%s) = %v, want nil", tt.args, err)
			case tt.at != "" && (!errors.Is(err, ErrArguments) || !strings.Contains(err.Error(), "at "+tt.at+":")):
				t.Errorf("ValidateArguments(%s) = %v, want an error wrapping ErrArguments that says at %s", tt.args, err, tt.at)
			}
		})
	}
}

// TestValidateArgumentsDeepLongKeys checks that looking for huge numbers costs memory in
// proportion to the arguments, whatever their shape: it wrote the JSON pointer of every
// value it passed, each copying its parent's, so a long key over deeply nested arrays
// (110 kB: a 100 kB key over 5,000 arrays) held 500 MB at once, and 1 MB (a 1 MB key,
// 10,000 arrays, as deep as encoding/json reads) 10 GB. Many huge numbers under such a
// key are reported briefly, not each with its whole pointer.
func TestValidateArgumentsDeepLongKeys(t *testing.T) {
	tool := &catalog.Tool{Qualified: "t__bounded", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"n":{"type":"number","minimum":0}}}`)}
	key := strings.Repeat("k", 100_000)
	const depth = 5000
	for _, tt := range []struct{ name, inner, want string }{
		{"valid", "1", "at /n: got string"},
		{"huge numbers", strings.Repeat("1e999,", 2000) + "1", "and 1990 more"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := `{"n":"x","` + key + `":` + strings.Repeat("[", depth) + tt.inner + strings.Repeat("]", depth) + `}`
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := ValidateArguments(tool, json.RawMessage(args))
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ValidateArguments = %.300v, want an error with %q", err, tt.want)
			}
			if err != nil && len(err.Error()) > 10*len(args) {
				t.Errorf("the error is %d bytes for arguments of %d", len(err.Error()), len(args))
			}
			if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(200*len(args)); got > limit {
				t.Errorf("checking %d bytes of arguments allocated %d MB (more than %d MB)", len(args), got>>20, limit>>20)
			}
		})
	}
}

// TestShortenKeepsCharacters: a pointer or number cut for an error message is cut at a
// character's start, so the message stays valid UTF-8.
func TestShortenKeepsCharacters(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc…"},
		{"aé", 2, "a…"}, // é is 2 bytes: the cut would fall inside it
		{"日本", 4, "日…"}, // each 3 bytes
	} {
		if got := shorten(tt.s, tt.n); got != tt.want || !utf8.ValidString(got) {
			t.Errorf("shorten(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
