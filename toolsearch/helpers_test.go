package toolsearch

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

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

// golden compares got with testdata/name, or rewrites the file under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./toolsearch -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the encoding:\n got: %s\nwant: %s\n(run with -update if the change is intended)", path, got, want)
	}
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
