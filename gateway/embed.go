package gateway

import (
	"errors"
	"sync"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/search"
)

// vectors keeps the embeddings of the current catalog's tools for tool_search (see
// Options.Embed). A catalog that changes (an upstream starts, restarts or lists new
// tools) is embedded again in the background, which costs only the tools that changed
// thanks to embed's cache; until its vectors are ready, tool_search answers with words
// alone, as it does when the endpoint fails. A profile with a scope searches its own
// catalog (see assembly.plan), whose vectors are the rows of its tools: nothing is
// embedded twice.
type vectors struct {
	g      *Gateway
	client *embed.Client
	base   *hybrid.Searcher // shares the endpoint's log state across catalogs

	mu       sync.Mutex
	snap     *catalog.Snapshot         // the catalog vecs are for
	vecs     *embed.Vectors            // nil until built
	parts    map[string]*embed.Vectors // the vectors of scopes' catalogs, by hash: rows of vecs
	building string                    // the snapshot hash being embedded, "" when none
	failed   string                    // the last snapshot hash whose embedding failed
	failedAt time.Time                 // when: it is retried after embedRetry

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

// rank returns the hybrid ranking over ix, an index of the current catalog or of a
// scope's catalog taken from it, when its vectors are ready, and nil (words alone)
// otherwise, starting the current catalog's embedding if nothing is under way.
func (v *vectors) rank(ix *search.Index) func(string, search.Options) ([]search.Result, error) {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if vecs := v.of(ix.Snapshot()); vecs != nil {
		hs := v.base.With(ix, vecs)
		return func(q string, opts search.Options) ([]search.Result, error) {
			return hs.Search(v.g.life, q, opts)
		}
	}
	v.start(v.g.current.Load().snap)
	return nil
}

// of returns the vectors of snap's tools: those of the catalog embedded, or, for a
// scope's catalog taken from it, the rows of its tools. It returns nil when they are
// not all embedded (the catalog changed since). v.mu is held.
func (v *vectors) of(snap *catalog.Snapshot) *embed.Vectors {
	switch {
	case v.vecs == nil:
		return nil
	case snap.Hash() == v.snap.Hash():
		return v.vecs
	case v.parts[snap.Hash()] != nil:
		return v.parts[snap.Hash()]
	}
	rows := make([]int, snap.Len())
	for i, t := range snap.Tools() {
		o, err := v.snap.Lookup(t.Qualified, nil)
		if err != nil || o.Qualified != t.Qualified || embed.ToolText(o) != embed.ToolText(t) {
			return nil
		}
		rows[i] = o.Index
	}
	part, err := v.vecs.Rows(rows)
	if err != nil {
		return nil
	}
	if v.parts == nil || len(v.parts) >= v.g.cache.Size {
		v.parts = map[string]*embed.Vectors{} // as many as there are indexes kept
	}
	v.parts[snap.Hash()] = part
	return part
}

// start starts embedding snap's tools, unless they are or something else is under way.
// v.mu is held.
func (v *vectors) start(snap *catalog.Snapshot) {
	hash := snap.Hash()
	if v.building != "" || (v.vecs != nil && v.snap.Hash() == hash) || (v.failed == hash && time.Since(v.failedAt) <= embedRetry) {
		return
	}
	v.building = hash
	go v.build(snap)
}

// prepare starts embedding snap's tools, if they are not and nothing else is under way.
func (v *vectors) prepare(snap *catalog.Snapshot) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.start(snap)
}

func (v *vectors) build(snap *catalog.Snapshot) {
	hash := snap.Hash()
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
			v.prepare(a.snap)
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
	v.snap, v.vecs, v.parts = snap, vecs, nil
	if st.Embedded > 0 {
		v.g.logf("tool_search fuses words with embeddings: %d tools embedded, %d from the cache", st.Embedded, st.Cached)
	}
}
