package toolsearch

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolshed/toolshed/searchlog"
)

// TestSearcherRecords: a Searcher given a Log records each search, failed ones with
// their error code.
func TestSearcherRecords(t *testing.T) {
	ctx := context.Background()
	log, err := searchlog.Open(ctx, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(ctx)
	s, err := NewSearcher(testSnapshot(t), Options{DeferByDefault: true, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	found, err := s.Find("create issue", 3)
	if err != nil || len(found) == 0 {
		t.Fatalf("Find = %v, %v; want tools", found, err)
	}
	if _, err := s.Find("", 3); err == nil {
		t.Fatal("Find of an empty query succeeded")
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, _, err := log.Read(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d searches recorded, want 2: %+v", len(got), got)
	}
	ok, bad := got[0], got[1]
	if ok.Source != "library" || ok.Query != "create issue" || ok.Mode != "bm25" || ok.Error != "" || len(ok.Results) != len(found) {
		t.Errorf("recorded %+v, want the library's bm25 search with its %d results", ok, len(found))
	}
	for i, h := range ok.Results {
		if h.Tool != found[i].Qualified || h.Rank != i+1 {
			t.Errorf("result %d = %+v, want %s at rank %d", i, h, found[i].Qualified, i+1)
		}
	}
	if ok.CatalogTokens <= 0 || ok.ResultTokens <= 0 || ok.ResultTokens >= ok.CatalogTokens {
		t.Errorf("tokens: catalog %d, results %d; want the results a part of the catalog", ok.CatalogTokens, ok.ResultTokens)
	}
	if bad.Error != "invalid_tool_input" || len(bad.Results) != 0 {
		t.Errorf("recorded %+v, want the empty query's invalid_tool_input", bad)
	}
}
