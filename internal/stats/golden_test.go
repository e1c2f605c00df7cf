package stats

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/golden"
	"github.com/toolshed/toolshed/searchlog"
)

// recorded reads the recorded log in testdata.
func recorded(t testing.TB) ([]searchlog.Search, []searchlog.Call) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	searches, calls, err := ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	return searches, calls
}

func testCatalog(t testing.TB) *catalog.Snapshot {
	t.Helper()
	snap, problems := catalog.LoadFiles(filepath.Join("testdata", "catalog.json"))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return snap
}

// recordedReport is the report of the recorded log over the week it covers.
func recordedReport(t testing.TB, snap *catalog.Snapshot) Report {
	searches, calls := recorded(t)
	return Compute(searches, calls, Options{
		Since:   time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC),
		Until:   time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Catalog: snap,
	})
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name    string
		catalog bool
	}{{"recorded", true}, {"recorded-nocatalog", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var snap *catalog.Snapshot
			if tc.catalog {
				snap = testCatalog(t)
			}
			r := recordedReport(t, snap)
			var text bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", tc.name+".txt"), text.Bytes())
			js, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", tc.name+".json"), append(js, '\n'))
		})
	}
}
