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
