package toolsearch_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The library and the core it builds on link no database driver: recording searches
// takes a Recorder, which the search log's *searchlog.Log is, without importing it.
func TestNoDatabaseDrivers(t *testing.T) {
	for _, pkg := range []string{"github.com/toolshed/toolshed/toolsearch", "github.com/toolshed/toolshed/search"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "modernc.org/sqlite") || strings.HasPrefix(dep, "github.com/jackc/pgx") || dep == "github.com/toolshed/toolshed/searchlog" {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
