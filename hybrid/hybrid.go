// Package hybrid fuses toolshed's word search (package search, BM25F) with the cosine
// similarity of embeddings from the user's own model (package embed): words find what
// a request names, vectors find what it means in other words. It sits beside search
// rather than in it, using only search's public API, so that either can change alone.
package hybrid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/search"
)

// How a fused result was found (search.Result.Match), beside search's own kinds.
const (
	MatchHybrid = "hybrid" // ranked by both words and vectors
	MatchVector = "vector" // ranked by vectors alone: it shares no word with the query
)

// Defaults for the zero values of Options.
const (
	// DefaultQueryTimeout bounds a query's embedding: a local model answers a short
	// query in 10–50 ms; past this, search answers with words alone rather than wait.
	DefaultQueryTimeout = 300 * time.Millisecond
	// DefaultDepth is how many results of each ranking are fused.
	DefaultDepth = 50
	// RRFK is reciprocal rank fusion's constant (Cormack et al., 2009): a result at rank
	// r adds 1/(RRFK+r). 60 is the paper's value and the usual one; it keeps the first
	// ranks of either list from drowning the other.
	RRFK = 60
	// DefaultConfident is Options.Confident's default: a word match scoring at least
	// 0.3 of the best one's BM25F score is a confident one, which the vectors do not
	// move. Measured with a real, weak model (Universal Sentence Encoder Lite) on the
	// four dev sets, every share from 0.2 to 0.4 keeps hybrid at or above words alone
	// on each (bench/README.md, "Hybrid search with a real model").
	DefaultConfident = 0.3
)

// Options shape a Searcher.
type Options struct {
	// QueryTimeout bounds the query's embedding; zero means DefaultQueryTimeout.
	QueryTimeout time.Duration
	// Depth is how many results of each ranking are fused; zero means DefaultDepth.
	Depth int
	// Confident is the share of the best word match's score at which a word match is
	// confident (see Fuse); zero means DefaultConfident, and a negative value none is
	// (plain reciprocal rank fusion, which lets a weak model push right word matches
	// out of the first results).
	Confident float64
	// Logger receives the one warning when the endpoint fails, and the note when it
	// answers again; nil means slog.Default().
	Logger *slog.Logger
}

// Searcher answers searches over one catalog with BM25F and vectors fused. It is safe
// for concurrent use.
type Searcher struct {
	ix     *search.Index
	vecs   *embed.Vectors
	client *embed.Client
	opts   Options
	health *health // shared by the Searchers made With this one
}

// health is whether the endpoint's last answer to a query failed, and was logged.
type health struct {
	mu        sync.Mutex
	failed    bool
	fallbacks int64 // searches answered with words alone because the query's embedding failed
}

// New returns a Searcher over ix whose tools have vecs (one a tool of ix's snapshot, in
// order, as Vectors built from embed.ToolText), embedding queries with client. A nil
// vecs or client makes it search with words alone. ix may be nil for a Searcher that
// only serves as the base of With.
func New(ix *search.Index, vecs *embed.Vectors, client *embed.Client, opts Options) *Searcher {
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = DefaultQueryTimeout
	}
	if opts.Depth <= 0 {
		opts.Depth = DefaultDepth
	}
	if opts.Confident == 0 {
		opts.Confident = DefaultConfident
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if vecs != nil && vecs.Len() != ix.Snapshot().Len() {
		vecs = nil // not this catalog's: words alone, never a wrong tool
	}
	return &Searcher{ix: ix, vecs: vecs, client: client, opts: opts, health: &health{}}
}

// With returns a Searcher over another index of a catalog (a newer one, or one with
// learned evidence) that shares s's client, options and log state, so that a gateway
// whose catalog changes still says once, not once an index, that the endpoint failed.
// vecs must be ix's snapshot's, as for New.
func (s *Searcher) With(ix *search.Index, vecs *embed.Vectors) *Searcher {
	if vecs != nil && vecs.Len() != ix.Snapshot().Len() {
		vecs = nil
	}
	return &Searcher{ix: ix, vecs: vecs, client: s.client, opts: s.opts, health: s.health}
}

// Fallbacks is how many searches (of s and the Searchers made With it) answered with
// words alone because the query's embedding failed: what a measurement must report
// beside its figures.
func (s *Searcher) Fallbacks() int64 {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.health.fallbacks
}

// Index is the word index searched.
func (s *Searcher) Index() *search.Index { return s.ix }

// Search ranks tools for query: tools the query names exactly first, as search.Index.Search
// puts them, then BM25F's and cosine similarity's first Depth results fused by
// reciprocal rank. The query's embedding is bounded by QueryTimeout; when it fails the
// answer is BM25F's alone, and the failure is logged once until the endpoint answers
// again. The errors are search's own (an empty or over-long query).
func (s *Searcher) Search(ctx context.Context, query string, opts search.Options) ([]search.Result, error) {
	return s.search(query, opts, func() ([]float32, error) {
		qctx, cancel := context.WithTimeout(ctx, s.opts.QueryTimeout)
		defer cancel()
		return s.client.Query(qctx, query)
	})
}

// SearchVector is Search with the query's embedding qv already made by the caller
// (with the Searcher's client), as toolshed search makes it before the tools', to know
// at once whether the endpoint answers. A qv of another dimension than the tools' gives
// words alone, as a failed embedding does.
func (s *Searcher) SearchVector(query string, qv []float32, opts search.Options) ([]search.Result, error) {
	return s.search(query, opts, func() ([]float32, error) { return qv, nil })
}

// SearchVectors ranks tools for query by the cosine similarity of their vectors alone,
// without words: what a measurement sets beside words and the fusion, to show whether
// a model helps. It fails when the query cannot be embedded or s has no vectors.
func (s *Searcher) SearchVectors(ctx context.Context, query string, opts search.Options) ([]search.Result, error) {
	if s.vecs == nil || s.client == nil {
		return nil, fmt.Errorf("%w: no vectors for this catalog", embed.ErrConfig)
	}
	qctx, cancel := context.WithTimeout(ctx, s.opts.QueryTimeout)
	defer cancel()
	qv, err := s.client.Query(qctx, query)
	if err != nil {
		return nil, err
	}
	if len(qv) != s.vecs.Dim() {
		return nil, fmt.Errorf("%w: the query's vector has %d dimensions, the tools' %d", embed.ErrBadResponse, len(qv), s.vecs.Dim())
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = search.DefaultLimit
	}
	var allow func(int) bool
	if opts.Allow != nil {
		allow = opts.Allow.Has
	}
	var out []search.Result
	for _, h := range s.vecs.TopK(qv, min(limit, search.MaxLimit), allow) {
		if h.Score <= 0 {
			break
		}
		out = append(out, search.Result{Tool: s.ix.Snapshot().Tool(h.Index), Score: float64(h.Score), Match: MatchVector})
	}
	return out, nil
}

// search is Search with the query's embedding from embedQuery.
func (s *Searcher) search(query string, opts search.Options, embedQuery func() ([]float32, error)) ([]search.Result, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = search.DefaultLimit
	}
	limit = min(limit, search.MaxLimit)
	words := opts
	words.Limit = max(limit, s.opts.Depth)
	lexical, err := s.ix.Search(query, words)
	if err != nil || s.vecs == nil || s.client == nil {
		return cut(lexical, limit), err
	}
	qv, err := embedQuery()
	if err == nil && len(qv) != s.vecs.Dim() {
		err = fmt.Errorf("%w: the query's vector has %d dimensions, the tools' %d", embed.ErrBadResponse, len(qv), s.vecs.Dim())
	}
	s.note(err)
	if err != nil {
		return cut(lexical, limit), nil
	}
	var allow func(int) bool
	if opts.Allow != nil {
		allow = opts.Allow.Has
	}
	hits := s.vecs.TopK(qv, s.opts.Depth, allow)
	// A tool at cosine 0 or below shares nothing with the query: it would only pad the
	// answer. Real models rarely go that low; tests' bag-of-words model does.
	for i, h := range hits {
		if h.Score <= 0 {
			hits = hits[:i]
			break
		}
	}
	return Fuse(s.ix.Snapshot(), lexical, hits, FuseOptions{Limit: limit, Depth: s.opts.Depth, Confident: s.opts.Confident}), nil
}

func cut(r []search.Result, n int) []search.Result {
	if len(r) > n {
		return r[:n]
	}
	return r
}

// note logs the first failure of a run of failures, and the recovery after one, so a
// dead endpoint costs one line, not one a search.
func (s *Searcher) note(err error) {
	h := s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.fallbacks++
	}
	switch {
	case err != nil && !h.failed:
		h.failed = true
		kind := "failed"
		switch {
		case errors.Is(err, embed.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
			kind = fmt.Sprintf("timed out (%s)", s.opts.QueryTimeout)
		case errors.Is(err, embed.ErrBadResponse):
			kind = "returned garbage"
		case errors.Is(err, embed.ErrUnavailable):
			kind = "is unavailable"
		}
		s.opts.Logger.Warn("embedding endpoint "+kind+"; searching with words (BM25F) alone until it answers", "err", err)
	case err == nil && h.failed:
		h.failed = false
		s.opts.Logger.Info("embedding endpoint answers again; searching with words and vectors")
	}
}

// FuseOptions shape Fuse: Limit results at most, from the first Depth of each ranking,
// word matches scoring at least Confident times the best one's kept first (none when
// Confident is zero or less).
type FuseOptions struct {
	Limit, Depth int
	Confident    float64
}

// Fuse merges a search.Index.Search ranking with a cosine ranking of snap's tools. The
// exact and named matches that lead lexical stay first, in order; then the confident
// word matches, those whose score is at least Confident times the best word match's, in
// their order; then every other tool of the first Depth results of either list, scored
// 1/(RRFK+rank) for its rank in each list without the tools already placed, summed,
// ties going to the better lexical rank.
//
// Why not reciprocal rank fusion of the whole lists: it gives both rankings equal
// votes and ignores how sure each is, so a mediocre model's ranking pushes word matches
// that fit the query well out of the first five, which is how hybrid search lost to
// words alone with a real model. A word match far below the best one (a query whose
// words the catalog does not use, or uses everywhere) is where the model may know what
// the words do not, and there its ranking gets an equal vote.
//
// A fused result's Score is its BM25F score for a confident word match, else its RRF
// score; its Match says which lists found it: search's kind for words alone,
// MatchVector for vectors alone, MatchHybrid for both.
func Fuse(snap *catalog.Snapshot, lexical []search.Result, hits []embed.Hit, o FuseOptions) []search.Result {
	limit, depth := o.Limit, o.Depth
	var out []search.Result
	placed := map[*catalog.Tool]bool{}
	inVectors := map[*catalog.Tool]bool{}
	for i, h := range hits {
		if i >= depth {
			break
		}
		inVectors[snap.Tool(h.Index)] = true
	}
	var rest []search.Result
	best := -1.0
	for _, r := range lexical {
		switch {
		case r.Match == search.MatchExact || r.Match == search.MatchNamed:
			out = append(out, r)
			placed[r.Tool] = true
			continue
		case best < 0:
			best = r.Score
		}
		if o.Confident > 0 && len(rest) == 0 && r.Score >= o.Confident*best && len(out) < limit {
			if inVectors[r.Tool] {
				r.Match = MatchHybrid
			}
			out = append(out, r)
			placed[r.Tool] = true
			continue
		}
		rest = append(rest, r)
	}
	type entry struct {
		tool  *catalog.Tool
		score float64
		match string
	}
	byTool := map[*catalog.Tool]*entry{}
	var order []*entry
	rank := 0
	for _, r := range rest {
		rank++
		if rank > depth {
			break
		}
		e := &entry{tool: r.Tool, score: 1 / float64(RRFK+rank), match: r.Match}
		byTool[r.Tool] = e
		order = append(order, e)
	}
	rank = 0
	for i, h := range hits {
		if i >= depth {
			break
		}
		t := snap.Tool(h.Index)
		if placed[t] {
			continue
		}
		rank++
		add := 1 / float64(RRFK+rank)
		if e := byTool[t]; e != nil {
			e.score += add
			e.match = MatchHybrid
			continue
		}
		e := &entry{tool: t, score: add, match: MatchVector}
		byTool[t] = e
		order = append(order, e)
	}
	slices.SortStableFunc(order, func(a, b *entry) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0 // stable: lexical order first, then vector order
	})
	for _, e := range order {
		if len(out) >= limit {
			break
		}
		out = append(out, search.Result{Tool: e.tool, Score: e.score, Match: e.match})
	}
	return cut(out, limit)
}
