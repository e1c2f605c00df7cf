package messages_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/internal/embedtest"
	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/messages"
)

// TestBM25EmbeddingBuildsBounded: a client that sends many distinct tools lists, each
// searched once, while the embedding endpoint is slow, never has more than a few
// lists embedded at once: the builds of lists the proxy no longer keeps, and of lists
// past the bound, are not piled onto the endpoint (each would hold a goroutine, the
// list's texts and connections until the endpoint answers).
func TestBM25EmbeddingBuildsBounded(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	inflight, most := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inflight++
		most = max(most, inflight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			inflight--
			mu.Unlock()
		}()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "the model is gone", http.StatusInternalServerError)
	}))
	defer srv.Close()
	defer close(release)

	const lists = 24
	var replies []fakellm.Reply
	for range lists {
		replies = append(replies, fakellm.Call("", "toolu_1", "tool_search_tool_bm25", `{"query":"weather"}`), fakellm.Say("done"))
	}
	h := newHarness(t, replies...)
	c, err := embed.New(embed.Options{URL: srv.URL + "/api/embed", Model: embedtest.Model, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	h.proxy.Embed = c
	h.proxy.EmbedQueryTimeout = time.Millisecond // words alone while the vectors come
	h.proxy.EmbedBuild = embed.BuildOptions{CacheDir: "-"}
	for i := range lists {
		ts := append(tools("bm25"), anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: fmt.Sprintf("extra_%d", i), Description: anthropic.String("One more tool"),
			InputSchema:  anthropic.ToolInputSchemaParam{Properties: map[string]any{}},
			DeferLoading: anthropic.Bool(true),
		}})
		if _, err := h.send(t, false, anthropic.MessageNewParams{Model: "fake-model", MaxTokens: 1024, Tools: ts,
			Messages: []anthropic.MessageParam{ask("What is the weather?")}}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	// Let the builds that were started reach the endpoint.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := inflight
		mu.Unlock()
		if n >= messages.MaxEmbedBuilds || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // and any more, were there more: the check below cannot pass for a wait
	mu.Lock()
	got := most
	mu.Unlock()
	if got > messages.MaxEmbedBuilds {
		t.Errorf("%d embedding requests at once for %d distinct tools lists (one request per build); want at most %d builds at once", got, lists, messages.MaxEmbedBuilds)
	}
	if got == 0 {
		t.Errorf("no tools list was embedded")
	}
}
