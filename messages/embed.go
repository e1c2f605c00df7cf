package messages

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/search"
)

// embedRetry is how long a tools list whose embedding failed waits before another try:
// long enough not to hammer an endpoint that is down, short enough that one that comes
// back is used soon (as the gateway does).
const embedRetry = time.Minute

// maxEmbedBuilds bounds the tools lists embedded at once, across every client: each
// distinct list a client sends starts a build that outlives its request (and the
// toolSetCache's memory of that list), so without a bound a client sending many lists
// would pile builds, their texts and their connections onto the endpoint. A list that
// finds every slot taken is searched with words alone, and tries again at its next
// search.
const maxEmbedBuilds = 2

// toolVectors is the embedding of one toolSet's deferred tools, started by the first
// BM25 search of that tools list and shared by every request that sends it again.
type toolVectors struct {
	mu    sync.Mutex
	build *hybrid.Background
}

// embedState is what the Proxy keeps for hybrid search across tools lists: the
// Searcher whose log state they share, and whether the last tools list's embedding
// failed, so that an endpoint that is down is warned about once, not once a list.
type embedState struct {
	once   sync.Once
	base   *hybrid.Searcher
	mu     sync.Mutex
	failed bool
	builds int // builds running (see maxEmbedBuilds)
}

func (p *Proxy) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (p *Proxy) queryTimeout() time.Duration {
	if p.EmbedQueryTimeout > 0 {
		return p.EmbedQueryTimeout
	}
	return hybrid.DefaultQueryTimeout
}

// bm25 ranks a BM25 search of ts's deferred tools: fused with their embeddings when
// the Proxy has an embedding endpoint and the tools' vectors are ready, by words alone
// otherwise. The first search of a tools list starts its embedding and waits for it at
// most the query timeout, so a list whose vectors are cached is fused from its first
// search and a long first embedding never holds a request.
func (p *Proxy) bm25(ctx context.Context, ts *toolSet, query string, opts search.Options) ([]search.Result, error) {
	return p.fused(ctx, ts.catalog.index, &ts.catalog.vectors, nil, query, opts)
}

// fused is bm25 over the index ix, whose tools' vectors v keeps: the search tools'
// deferred tools, or a client's own (see clientSearchInput), embedded as texts says
// (nil: embed.ToolTexts of ix's tools).
func (p *Proxy) fused(ctx context.Context, ix *search.Index, v *toolVectors, texts []string, query string, opts search.Options) ([]search.Result, error) {
	if p.Embed == nil {
		return ix.Search(query, opts)
	}
	v.mu.Lock()
	if (v.build == nil || v.build.Stale(embedRetry)) && p.takeBuild() {
		// The build outlives the request that started it: later requests with the same
		// tools use it.
		if texts == nil {
			texts = embed.ToolTexts(ix.Snapshot())
		}
		b := hybrid.StartBuildTexts(context.WithoutCancel(ctx), p.Embed, texts, p.EmbedBuild)
		v.build = b
		go func() {
			b.Wait(context.Background())
			p.endBuild()
		}()
	}
	b := v.build
	v.mu.Unlock()
	if b == nil {
		return ix.Search(query, opts) // every build slot is taken
	}
	wait, cancel := context.WithTimeout(ctx, p.queryTimeout())
	vecs, stats, err, done := b.Wait(wait)
	cancel()
	if !done {
		return ix.Search(query, opts)
	}
	base := p.embedBase()
	p.noteBuild(err, stats, ix.Snapshot().Len())
	if err != nil {
		return ix.Search(query, opts)
	}
	return base.With(ix, vecs).Search(ctx, query, opts)
}

// takeBuild takes a slot for a build of a tools list's vectors, and reports whether
// one was free (see maxEmbedBuilds).
func (p *Proxy) takeBuild() bool {
	e := &p.embed
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.builds >= maxEmbedBuilds {
		return false
	}
	e.builds++
	return true
}

// endBuild gives back the slot of a build that ended.
func (p *Proxy) endBuild() {
	e := &p.embed
	e.mu.Lock()
	e.builds--
	e.mu.Unlock()
}

func (p *Proxy) embedBase() *hybrid.Searcher {
	e := &p.embed
	e.once.Do(func() {
		e.base = hybrid.New(nil, nil, p.Embed, hybrid.Options{QueryTimeout: p.queryTimeout(), Logger: p.logger()})
	})
	return e.base
}

// noteBuild logs the first failed embedding of a run of failures, and the success
// after one, so that an endpoint that is down costs one warning.
func (p *Proxy) noteBuild(err error, stats embed.BuildStats, n int) {
	e := &p.embed
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case err != nil && !e.failed:
		e.failed = true
		p.logger().Warn("embedding the deferred tools failed; search (tool_search_tool_bm25, and the answers to the client's own) uses words (BM25F) alone, and tries again in a minute", "tools", n, "err", err)
	case err == nil && e.failed:
		e.failed = false
		p.logger().Info("embedding endpoint answers again; search fuses words and vectors", "tools", n, "embedded", stats.Embedded, "cached", stats.Cached)
	}
}
