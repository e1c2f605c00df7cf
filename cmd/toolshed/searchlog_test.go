package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/searchlog"
)

// TestStatsReadsTheStore: toolshed stats --db reads what a Log wrote to a SQLite file.
func TestStatsReadsTheStore(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "log.db")
	log, err := searchlog.Open(ctx, db, searchlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	log.Search(searchlog.Search{Time: now.Add(-time.Hour), Source: "gateway", Session: "s1", Query: "add numbers", Mode: "bm25", Results: []searchlog.Hit{{Tool: "alpha__add", Rank: 1}}})
	log.Search(searchlog.Search{Time: now.Add(-time.Hour), Source: "gateway", Session: "s1", Query: "nothing here", Mode: "bm25"})
	log.Call(searchlog.Call{Time: now.Add(-time.Hour), Source: "gateway", Session: "s1", Tool: "alpha__add", Server: "alpha", Outcome: searchlog.OutcomeOK, Rank: 1, Query: "add numbers"})
	if err := log.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"stats", "--json", "--db", db}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var r struct{ Searches, Calls int }
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("%v in %s", err, stdout.String())
	}
	if r.Searches != 2 || r.Calls != 1 {
		t.Errorf("stats counted %d searches and %d calls, want 2 and 1:\n%s", r.Searches, r.Calls, stdout.String())
	}
}

// TestStatsWithoutStore: with no log yet, stats says so rather than create one.
func TestStatsWithoutStore(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := run([]string{"stats"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "no search log at") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
