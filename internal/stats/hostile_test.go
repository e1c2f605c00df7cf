package stats

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/toolshed/toolshed/internal/golden"
	"github.com/toolshed/toolshed/searchlog"
)

// Hostile strings a client or an upstream can put into the log: terminal escapes that
// set the window title, clear the screen and move the cursor, a bidi override, a
// newline and a tab that would break the tables. (The log stores valid UTF-8 only, as
// JSON does: TestShow covers the bytes that are not.)
const (
	evilTool   = "evil__x\x1b]0;PWNED\x07\x1b[2J"
	evilServer = "srv\x1b[31m\u202e"
	evilQuery  = "find\x1b[1A\nfiles\t"
	evilHash   = "sha256:\x1b]0;PWN\x07\u009b2J" // 12 bytes after the prefix (a C1 CSI among them), and more
)

// hostileRecords are searches and calls whose every string column is hostile.
func hostileRecords() ([]searchlog.Search, []searchlog.Call) {
	searches := []searchlog.Search{
		srch(0, "s1", evilQuery, "ok__tool"),
		srch(1, "s1", evilHash+"0123456789", "ok__tool"),
		srch(2, "s2", "plain query", evilTool),
	}
	c := call(3, "s1", evilTool, 0)
	c.Server = evilServer
	low := call(4, "s2", evilTool, 5)
	low.Server = evilServer
	unknown := call(5, "s1", "nobody\x1b[2J", 0)
	unknown.Server = ""
	return searches, []searchlog.Call{c, low, unknown}
}

// controlFree fails the test when out holds a control character, a bidi or other
// format character, or a byte that is not UTF-8 (other than the text's own newlines).
func controlFree(t *testing.T, what string, out []byte) {
	t.Helper()
	for i, r := range string(out) {
		if r == '\n' {
			continue
		}
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			t.Fatalf("%s holds %U at byte %d: a string from the log reached it raw\n%q", what, r, i, out)
		}
	}
}

// TestHostileNames checks that no string of the log reaches the text or HTML report
// raw (tool and server names, plain and hashed queries alike), and that the JSON report
// keeps them exactly.
func TestHostileNames(t *testing.T) {
	searches, calls := hostileRecords()
	r := Compute(searches, calls, Options{})
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	controlFree(t, "the text report", text.Bytes())
	golden.Check(t, filepath.Join("testdata", "hostile.txt"), text.Bytes())

	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	// The page's own markup has newlines only; the names must hold none of the rest.
	controlFree(t, "the HTML report", page.Bytes())

	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.TopTools[0].Tool; got != evilTool {
		t.Errorf("JSON tool = %q, want it exactly as logged, %q", got, evilTool)
	}
	if got := back.Servers[0].Server; got != evilServer {
		t.Errorf("JSON server = %q, want it exactly as logged, %q", got, evilServer)
	}
	queries := map[string]bool{}
	for _, q := range back.Misses.Queries {
		queries[q.Query] = true
	}
	if !queries[evilQuery] || !queries[evilHash+"0123456789"] {
		t.Errorf("JSON missed queries = %+v, want %q and the hash exactly as logged", back.Misses.Queries, evilQuery)
	}
}

func TestShow(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"github__create_issue", "github__create_issue"},
		{"café__thé", "café__thé"},
		{"a b", "a b"},
		{"", ""},
		{"evil\x1b]0;PWNED\x07\x1b[2J", `"evil\x1b]0;PWNED\a\x1b[2J"`},
		{"a\tb\nc", `"a\tb\nc"`},
		{"rtl\u202eevil", `"rtl\u202eevil"`},
		{"bad\xffbyte", `"bad\xffbyte"`},
		{"\u009b2J", `"\u009b2J"`},
	} {
		if got := show(tc.in); got != tc.want {
			t.Errorf("show(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if strings.ContainsFunc(show(tc.in), func(r rune) bool { return unicode.IsControl(r) }) {
			t.Errorf("show(%q) holds a control character", tc.in)
		}
	}
}
