package embed_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/internal/embedtest"
)

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tool number %d does thing %d", i, i*7)
	}
	return out
}

func TestBuildBatchesAndCaches(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	dir := t.TempDir()
	c := newClient(t, embed.Options{URL: srv.URL + "/api/embed", Model: embedtest.Model, BatchSize: 4, Concurrency: 2})
	in := texts(10)
	var progress []int
	v, st, err := embed.Build(context.Background(), c, in, embed.BuildOptions{CacheDir: dir, Progress: func(done, total int) {
		if total != 10 {
			t.Errorf("progress total %d, want 10", total)
		}
		progress = append(progress, done)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Len() != 10 || v.Dim() != embedtest.Dim || st != (embed.BuildStats{Tools: 10, Embedded: 10}) {
		t.Fatalf("len %d dim %d stats %+v", v.Len(), v.Dim(), st)
	}
	var sizes []int
	for _, r := range srv.Requests() {
		sizes = append(sizes, len(r.Input))
	}
	if len(sizes) != 3 || sizes[0]+sizes[1]+sizes[2] != 10 || max(sizes[0], sizes[1], sizes[2]) != 4 {
		t.Errorf("batch sizes %v, want 4+4+2 in any order", sizes)
	}
	if len(progress) != 3 || progress[2] != 10 {
		t.Errorf("progress %v", progress)
	}

	// A restart embeds nothing.
	srv.Reset()
	v2, st, err := embed.Build(context.Background(), c, in, embed.BuildOptions{CacheDir: dir})
	if err != nil || srv.Inputs() != 0 || st.Cached != 10 || st.Embedded != 0 {
		t.Fatalf("second build: err %v, %d inputs sent, stats %+v", err, srv.Inputs(), st)
	}
	q := embedtest.Vector("tool number 3 does thing 21", embedtest.Dim)
	if a, b := v.TopK(f32(q), 1, nil), v2.TopK(f32(q), 1, nil); a[0] != b[0] || a[0].Index != 3 {
		t.Errorf("cached vectors rank differently: %v vs %v", a, b)
	}

	// A changed tool and a new one: only those two are embedded.
	srv.Reset()
	in[4] = "a changed description"
	in = append(in, "a new tool")
	_, st, err = embed.Build(context.Background(), c, in, embed.BuildOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, r := range srv.Requests() {
		sent = append(sent, r.Input...)
	}
	if len(sent) != 2 || st.Embedded != 2 || st.Cached != 9 {
		t.Fatalf("sent %q, stats %+v; want only the changed and the new tool", sent, st)
	}

	// Another model (or dimensions, or prefix) has a cache of its own.
	srv.Reset()
	c32 := newClient(t, embed.Options{URL: srv.URL + "/api/embed", Model: embedtest.Model, Dimensions: 32})
	if _, st, err = embed.Build(context.Background(), c32, in, embed.BuildOptions{CacheDir: dir}); err != nil || st.Embedded != 11 {
		t.Fatalf("other dimensions: err %v, stats %+v", err, st)
	}
}

func TestBuildConcurrencyBound(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	srv.SetMode(embedtest.Slow, 20*time.Millisecond)
	var mu sync.Mutex
	inFlight, most := 0, 0
	wrapped := &countingTransport{before: func() {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
	}, after: func() {
		mu.Lock()
		inFlight--
		mu.Unlock()
	}}
	c := newClient(t, embed.Options{URL: srv.URL + "/v1/embeddings", Model: embedtest.Model, BatchSize: 2, Concurrency: 3, HTTPClient: wrappedClient(wrapped)})
	if _, _, err := embed.Build(context.Background(), c, texts(40), embed.BuildOptions{CacheDir: "-"}); err != nil {
		t.Fatal(err)
	}
	if most > 3 || most < 2 {
		t.Errorf("at most %d requests in flight, want 2..3 with Concurrency 3", most)
	}
}

func TestBuildKeepsWhatWasEmbeddedOnFailure(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	dir := t.TempDir()
	c := newClient(t, embed.Options{URL: srv.URL + "/v1/embeddings", Model: embedtest.Model, BatchSize: 5, Concurrency: 1})
	in := texts(5)
	if _, _, err := embed.Build(context.Background(), c, in, embed.BuildOptions{CacheDir: dir}); err != nil {
		t.Fatal(err)
	}
	srv.SetMode(embedtest.Error, 0)
	more := append(in, "one more")
	_, _, err := embed.Build(context.Background(), c, more, embed.BuildOptions{CacheDir: dir})
	if !errors.Is(err, embed.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	srv.SetMode(embedtest.Normal, 0)
	srv.Reset()
	if _, st, err := embed.Build(context.Background(), c, more, embed.BuildOptions{CacheDir: dir}); err != nil || st.Embedded != 1 {
		t.Fatalf("after recovery: err %v stats %+v, want the one missing tool embedded", err, st)
	}
}

func TestBuildDamagedCacheIsRecomputed(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	dir := t.TempDir()
	c := newClient(t, embed.Options{URL: srv.URL + "/v1/embeddings", Model: embedtest.Model})
	if _, _, err := embed.Build(context.Background(), c, texts(3), embed.BuildOptions{CacheDir: dir}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.vec"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	data, _ := os.ReadFile(files[0])
	os.WriteFile(files[0], data[:len(data)-7], 0o644)
	var warnings []error
	_, st, err := embed.Build(context.Background(), c, texts(3), embed.BuildOptions{CacheDir: dir, Warn: func(e error) { warnings = append(warnings, e) }})
	if err != nil || st.Embedded != 3 || len(warnings) != 1 || !errors.Is(warnings[0], embed.ErrCache) {
		t.Fatalf("err %v stats %+v warnings %v", err, st, warnings)
	}
}

// TestBuildSlowEndpoint: an endpoint that takes longer than the request timeout for a
// full batch (a model on a small machine's CPU) gets smaller batches, split until it
// answers in time, and the batches after go at the size that worked; the build
// succeeds with every vector. A single text that still times out fails it.
func TestBuildSlowEndpoint(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	srv.SetMode(embedtest.SlowPerText, 40*time.Millisecond) // 16 texts: 640 ms, over the timeout
	c := newClient(t, embed.Options{URL: srv.URL + "/v1/embeddings", Model: embedtest.Model, BatchSize: 16, Concurrency: 1, Timeout: 300 * time.Millisecond})
	v, st, err := embed.Build(context.Background(), c, texts(40), embed.BuildOptions{CacheDir: "-"})
	if err != nil || v.Len() != 40 || st.Embedded != 40 {
		t.Fatalf("build: %v, %d vectors, %+v", err, v.Len(), st)
	}
	reqs := srv.Requests()
	last := len(reqs[len(reqs)-1].Input)
	if len(reqs[0].Input) != 16 || last > 4 {
		t.Errorf("batch sizes: first %d, last %d; want the first full and the last at most 4 (300 ms / 40 ms a text)", len(reqs[0].Input), last)
	}
	srv.SetMode(embedtest.SlowPerText, 400*time.Millisecond)
	if _, _, err := embed.Build(context.Background(), c, []string{"a lone slow text"}, embed.BuildOptions{CacheDir: "-"}); !errors.Is(err, embed.ErrTimeout) {
		t.Errorf("a single text over the timeout: %v", err)
	}
}

// A text the endpoint refuses (longer than the model takes: OpenAI's 400) is found by
// halving its batch and left without a vector, with a warning that says how many and
// why; the others are embedded, and no search finds the refused one by its vector. When
// the endpoint refuses every text, Build fails.
func TestBuildRefusedText(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	srv.SetMaxWords(20)
	c := newClient(t, embed.Options{URL: srv.URL + "/v1/embeddings", Model: embedtest.Model, BatchSize: 8, Concurrency: 1})
	in := texts(12)
	long := 5
	in[long] = strings.Repeat("a very long description ", 10)
	var warned []string
	v, st, err := embed.Build(context.Background(), c, in, embed.BuildOptions{CacheDir: "-", Warn: func(err error) { warned = append(warned, err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	if v.Len() != 12 || st.Embedded != 11 || st.Refused != 1 {
		t.Fatalf("%d vectors, stats %+v; want 12 rows, 11 embedded, 1 refused", v.Len(), st)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "1 of the 12 tools embedded were refused") || !strings.Contains(warned[0], "maximum context length") {
		t.Errorf("warnings %q", warned)
	}
	for i, text := range in {
		hits := v.TopK(vectorOf(text), 12, nil)
		if i == long {
			for _, h := range hits {
				if h.Index == long {
					t.Errorf("the refused text was found by its vector: %+v", h)
				}
			}
			continue
		}
		if len(hits) == 0 || hits[0].Index != i {
			t.Errorf("text %d is not its own nearest: %+v", i, hits[:min(2, len(hits))])
		}
	}
	if len(v.TopK(vectorOf(in[0]), 20, nil)) != 11 {
		t.Errorf("TopK of every row returns the refused one too")
	}
	_, _, err = embed.Build(context.Background(), c, []string{in[long]}, embed.BuildOptions{CacheDir: "-"})
	if !errors.Is(err, embed.ErrRejected) || !errors.Is(err, embed.ErrUnavailable) {
		t.Errorf("a build whose every text is refused: %v, want ErrRejected", err)
	}
}

// vectorOf is embedtest's vector of text, as float32.
func vectorOf(text string) []float32 {
	v := embedtest.Vector(text, embedtest.Dim)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// An empty text is not sent and has no vector.
func TestBuildEmptyText(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	c := newClient(t, embed.Options{URL: srv.URL + "/v1/embeddings", Model: embedtest.Model})
	in := []string{"read a file", "", "write a file"}
	v, st, err := embed.Build(context.Background(), c, in, embed.BuildOptions{CacheDir: "-"})
	if err != nil || v.Len() != 3 || st.Embedded != 2 {
		t.Fatalf("build: %v, %d rows, %+v", err, v.Len(), st)
	}
	for _, r := range srv.Requests() {
		for _, text := range r.Input {
			if text == "" {
				t.Errorf("an empty text was sent")
			}
		}
	}
	for _, h := range v.TopK(vectorOf("read a file"), 3, nil) {
		if h.Index == 1 {
			t.Errorf("the empty text's row was found: %+v", h)
		}
	}
}
