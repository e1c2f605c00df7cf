package toolsearch

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
)

// testSnapshot loads testdata/catalog.json, which must load without problems.
func testSnapshot(t testing.TB) *catalog.Snapshot {
	t.Helper()
	snap, problems := catalog.LoadFiles(filepath.Join("testdata", "catalog.json"))
	if len(problems) > 0 {
		t.Fatalf("testdata/catalog.json: %v", problems)
	}
	return snap
}

// builtinSnapshot builds the repository's built-in catalog.
func builtinSnapshot(t testing.TB) *catalog.Snapshot {
	t.Helper()
	snap, problems := builtin.Snapshot()
	if len(problems) > 0 {
		t.Fatalf("built-in catalog: %v", problems)
	}
	return snap
}

// indented is v encoded as JSON, indented by two spaces, with a final newline.
func indented(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%v in %s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}

func ptr[T any](v T) *T { return &v }
