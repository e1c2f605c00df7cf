package toolsearch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/internal/embedtest"
)

// TestWithEmbeddings: the embedding-backed Searcher finds a deferred tool that shares
// no word with the query, never a tool outside the deferred ones, and answers with
// words alone when the endpoint fails.
func TestWithEmbeddings(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	snap := catalogtest.Snapshot(t, `{"servers": [
		{"name": "camera", "tools": [{"name": "take_picture", "description": "Take a picture with the device camera.", "inputSchema": {"type": "object"}}]},
		{"name": "mail", "tools": [{"name": "send", "description": "Send an email to a recipient.", "inputSchema": {"type": "object"}}]},
		{"name": "files", "tools": [{"name": "read_file", "description": "Read a file from disk.", "inputSchema": {"type": "object"}}]}]}`)
	words, err := NewSearcher(snap, Options{DeferByDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := embed.New(embed.Options{URL: srv.URL + "/v1/embeddings", Model: embedtest.Model})
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := words.WithEmbeddings(context.Background(), c, embed.BuildOptions{CacheDir: "-"}, hybrid.Options{QueryTimeout: 200 * time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := words.Find("grab a selfie", 3); len(got) != 0 && got[0].Qualified == "camera__take_picture" {
		t.Fatal("the premise fails: words alone find the tool")
	}
	got, err := s.Find("grab a selfie", 3)
	if err != nil || len(got) == 0 || got[0].Qualified != "camera__take_picture" {
		t.Fatalf("Find = %v, %v; want camera__take_picture first", got, err)
	}
	srv.SetMode(embedtest.Error, 0)
	got, err = s.Find("send an email", 3)
	if err != nil || len(got) == 0 || got[0].Qualified != "mail__send" {
		t.Fatalf("with the endpoint failing: %v, %v", got, err)
	}
	if _, err := words.WithEmbeddings(context.Background(), c, embed.BuildOptions{CacheDir: "-"}, hybrid.Options{}); !errors.Is(err, embed.ErrUnavailable) {
		t.Fatalf("embedding with the endpoint failing: %v", err)
	}
}
