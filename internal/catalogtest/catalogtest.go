// Package catalogtest builds catalog snapshots for tests from catalog documents written
// inline, so that the test packages of the module share one way of doing it.
package catalogtest

import (
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// Snapshot parses doc (any catalog file format) and builds its snapshot, failing the
// test if the document or any of its tools has a problem.
func Snapshot(t testing.TB, doc string) *catalog.Snapshot {
	t.Helper()
	sources, problems := catalog.Parse([]byte(doc), "test", "default")
	snap, more := catalog.Build(sources)
	if problems = append(problems, more...); len(problems) > 0 {
		t.Fatalf("test catalog has problems: %v", problems)
	}
	return snap
}
