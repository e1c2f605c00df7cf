package search

import (
	"encoding/json"
	"runtime"
	"testing"
	"unsafe"
	"weak"

	"github.com/toolshed/toolshed/catalog"
)

// TestStemCacheKeepsNoCatalogText checks that the process-wide stem table holds copies
// of words, not pieces of a catalog's text: once a catalog and its index are dropped,
// the memory of their text is freed even though its words stay in the table.
func TestStemCacheKeepsNoCatalogText(t *testing.T) {
	resetCaches()
	defer resetCaches()
	var text weak.Pointer[byte]
	func() {
		raw := []byte(`{"name": "zqx_lookup", "description": "Look up the zqx ipv4 records of a zqxhost.", "inputSchema": {"type": "object"}}`)
		snap, problems := catalog.Build([]catalog.Source{{Server: "zqx", Tools: []json.RawMessage{raw}}})
		if len(problems) != 0 {
			t.Fatal(problems)
		}
		text = weak.Make(unsafe.StringData(snap.Tool(0).Description))
		ix := NewIndex(snap)
		if _, ok := cachedStem(hashToken([]byte("zqx"))); !ok {
			t.Fatal(`"zqx" is not in the stem table after the build`)
		}
		runtime.KeepAlive(ix)
	}()
	for range 3 {
		runtime.GC()
	}
	if text.Value() != nil {
		t.Error("the catalog's text is still reachable after the catalog and its index were dropped")
	}
	if _, ok := cachedStem(hashToken([]byte("zqx"))); !ok {
		t.Error(`"zqx" left the stem table`)
	}
}

// TestColdBuildLearnsDictWords checks a first build in a process: the words it takes
// from stemdict.txt are published like the words it stems, so a rebuild finds both in
// the stem table, and the two builds make the same index.
func TestColdBuildLearnsDictWords(t *testing.T) {
	resetCaches()
	defer resetCaches()
	snap := trickyCatalog(t, 600)
	cold := NewIndex(snap)
	for _, w := range []string{"creates", "summaries", "files", "directory"} {
		if _, ok := builtinStem(hashToken([]byte(w)), w); !ok {
			t.Fatalf("%q is not in stemdict.txt", w)
		}
		if _, ok := cachedStem(hashToken([]byte(w))); !ok {
			t.Errorf("%q, from stemdict.txt, is not in the stem table after a first build", w)
		}
	}
	warm := NewIndex(snap)
	if diff := indexDiff(cold, warm); diff != "" {
		t.Errorf("a first build and a rebuild made different indexes: %s", diff)
	}
}
