package gateway

import (
	"errors"
	"sync"
	"time"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/search"
)

// vectors keeps the embeddings of the current catalog's tools for tool_search (see
// Options.Embed). A catalog that changes (an upstream starts, restarts or lists new
// tools) is embedded again in the background, which costs only the tools that changed
// thanks to embed's cache; until its vectors are ready, tool_search answers with words
// alone, as it does when the endpoint fails.
type vectors struct {
	g      *Gateway
	client *embed.Client
	base   *hybrid.Searcher // shares the endpoint's log state across catalogs

	mu       sync.Mutex
	hash     string         // the snapshot hash vecs are for
	vecs     *embed.Vectors // nil until built
	building string         // the snapshot hash being embedded, "" when none
	failed   string         // the last snapshot hash whose embedding failed
	failedAt time.Time      // when: it is retried after embedRetry

	warned map[string]bool // cache and store problems said already, by message
}

// warnOnce logs a problem of the vector cache or store once per process: a store that
// is down would otherwise say so at every catalog change.
func (v *vectors) warnOnce(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	kind := err.Error()
	if errors.Is(err, embed.ErrStore) {
		kind = "store"
	}
	if v.warned[kind] {
		return
	}
	if v.warned == nil {
		v.warned = map[string]bool{}
	}
	v.warned[kind] = true
	v.g.logf("%v", err)
}

// embedRetry is how long a catalog whose embedding failed waits before another try:
// long enough not to hammer an endpoint that is down, short enough that one that comes
// back is used soon.
const embedRetry = time.Minute

func newVectors(g *Gateway, c *embed.Client) *vectors {
	base := hybrid.New(nil, nil, c, hybrid.Options{QueryTimeout: g.opts.EmbedQueryTimeout, Logger: g.slogger()})
	return &vectors{g: g, client: c, base: base}
}

// rank returns the hybrid ranking over ix when its snapshot's vectors are ready, and
// nil (words alone) otherwise, starting their embedding if nothing is under way.
func (v *vectors) rank(ix *search.Index) func(string, search.Options) ([]search.Result, error) {
	if v == nil {
		return nil
	}
	snap := ix.Snapshot()
	hash := snap.Hash()
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.hash == hash && v.vecs != nil {
		hs := v.base.With(ix, v.vecs)
		return func(q string, opts search.Options) ([]search.Result, error) {
			return hs.Search(v.g.life, q, opts)
		}
	}
	if v.building == "" && (v.failed != hash || time.Since(v.failedAt) > embedRetry) {
		v.building = hash
		go v.build(ix, hash)
	}
	return nil
}

// prepare starts embedding ix's tools, if they are not and nothing else is under way.
func (v *vectors) prepare(ix *search.Index) { v.rank(ix) }

func (v *vectors) build(ix *search.Index, hash string) {
	snap := ix.Snapshot()
	texts := embed.ToolTexts(snap)
	var last time.Time
	vecs, st, err := embed.Build(v.g.life, v.client, texts, embed.BuildOptions{
		CacheDir: v.g.opts.EmbedCacheDir,
		Store:    v.g.opts.EmbedStore,
		Progress: func(done, total int) {
			if now := time.Now(); done == total || now.Sub(last) >= 5*time.Second {
				last = now
				v.g.logf("embedding tools for tool_search: %d/%d", done, total)
			}
		},
		Warn: v.warnOnce,
	})
	// The catalog may have changed meanwhile: embed the newest next.
	defer func() {
		if a := v.g.current.Load(); a != nil && a.snap.Hash() != hash {
			v.prepare(v.g.cache.Index(a.snap))
		}
	}()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.building = ""
	if err != nil {
		v.failed, v.failedAt = hash, time.Now()
		v.g.logf("tool_search uses words alone: embedding the catalog's %d tools failed: %v", snap.Len(), err)
		return
	}
	v.failed = ""
	v.hash, v.vecs = hash, vecs
	if st.Embedded > 0 {
		v.g.logf("tool_search fuses words with embeddings: %d tools embedded, %d from the cache", st.Embedded, st.Cached)
	}
}
