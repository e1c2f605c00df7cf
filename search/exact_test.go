package search

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/catalogtest"
)

// TestExactNamesCollisions checks that lookups compare names, not only hashes: with
// every name given the same hash, a name still finds exactly its own tools, in order.
func TestExactNamesCollisions(t *testing.T) {
	snap := trickyCatalog(t, 40)
	ix := NewIndex(snap)
	want := map[string][]int32{}
	for d, tool := range snap.Tools() {
		for _, name := range []string{normalizeName(tool.Name), normalizeName(tool.Qualified)} {
			if docs := want[name]; len(docs) == 0 || docs[len(docs)-1] != int32(d) {
				want[name] = append(docs, int32(d))
			}
		}
	}
	for name, docs := range want {
		if got := ix.lookupExact(name); !slices.Equal(got, docs) {
			t.Errorf("lookupExact(%q) = %v, want %v", name, got, docs)
		}
	}
	for _, name := range []string{"", "no_such_tool"} {
		if got := ix.lookupExact(name); len(got) != 0 {
			t.Errorf("lookupExact(%q) = %v, want none", name, got)
		}
	}
	// Every entry hashed as name: the lookup walks all of them and keeps name's own.
	same := make([]uint64, 2*snap.Len())
	for name, docs := range want {
		for i := range same {
			same[i] = hashToken([]byte(name))
		}
		ix.exact = buildExact(same)
		if got := ix.lookupExact(name); !slices.Equal(got, docs) {
			t.Errorf("all names hashed alike: lookupExact(%q) = %v, want %v", name, got, docs)
		}
	}
}

// TestExactQueryLongNames checks that ruling out long queries by their letter count
// never hides a tool's exact name: a bare name longer than any qualified name may be,
// written with other separators; and names whose lowercase form is longer in UTF-8.
func TestExactQueryLongNames(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 10) + "end" // 203 bytes
	ix := NewIndex(catalogtest.Snapshot(t, `{"servers": [{"name": "s", "tools": [
		{"name": "`+long+`", "inputSchema": {"type": "object"}},
		{"name": "ȺȺȺȺ", "inputSchema": {"type": "object"}},
		{"name": "short", "inputSchema": {"type": "object"}}]}]}`))
	for _, c := range []struct {
		query string
		want  string // "" for no exact match
	}{
		{long, long},
		{strings.ReplaceAll(long, "_", " ") + "  ", long},
		{"  " + strings.ToUpper(long), long},
		{long + strings.Repeat(" -", 150), long}, // long, but few letters
		{long + " and " + strings.Repeat("more words ", 30), ""},
		{"ⱥⱥⱥⱥ", "ȺȺȺȺ"},
		{"s__short", "short"},
	} {
		got := ix.exactQuery(c.query, shapeOf(c.query))
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("exactQuery(%.40q…) = %v, want none", c.query, got)
		case c.want != "" && (len(got) != 1 || ix.snap.Tool(int(got[0])).Name != c.want):
			t.Errorf("exactQuery(%.40q…) = %v, want the tool %.20q…", c.query, got, c.want)
		}
	}
}
