package search

import (
	"slices"
	"testing"
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
