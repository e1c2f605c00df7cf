package learn_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/learn"
	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/searchlog"
)

// A Learner reads a real search log's evidence and serves, for a base index, the index
// that has learned it: a query whose search led to a successful call of a tool finds
// that tool, though none of its words are the tool's own. Without a log there is no
// Learner, and a nil Learner serves the base index.
func TestLearnerLearns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sources, _ := catalog.Parse([]byte(`{"servers":[{"name":"files","tools":[
		{"name":"read_file","description":"Read a file from disk","inputSchema":{"type":"object"}},
		{"name":"write_file","description":"Write a file to disk","inputSchema":{"type":"object"}}]}]}`), "test", "")
	snap, _ := catalog.Build(sources)
	base := search.NewIndex(snap)
	const query = "show me what the notes say"
	if found, _ := base.Search(query, search.Options{}); len(found) > 0 && found[0].Tool.Qualified == "files__read_file" {
		t.Fatalf("the base index already finds read_file for %q; the test shows nothing", query)
	}
	if l := learn.New(nil, learn.Options{}); l != nil || l.Index(base) != base {
		t.Fatalf("without a log: %v", l)
	}
	log, err := searchlog.Open(ctx, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(context.Background())
	for range 3 {
		log.Call(searchlog.Call{Time: time.Now(), Source: "proxy", Tool: "files__read_file", Server: "files", Outcome: searchlog.OutcomeOK, Rank: 1, Query: query})
	}
	if err := log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	l := learn.New(log, learn.Options{Interval: 20 * time.Millisecond})
	go l.Run(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for {
		found, _ := l.Index(base).Search(query, search.Options{})
		if len(found) > 0 && found[0].Tool.Qualified == "files__read_file" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the learned index does not find read_file for %q within 30 s: %v", query, found)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
