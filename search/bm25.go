package search

import (
	"math"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
)

// Limits of a search request, as Anthropic's tool search defines them.
const (
	// MaxQueryLen is the longest BM25 query, in characters.
	MaxQueryLen = 500
	// MaxPatternLen is the longest regex pattern, in characters.
	MaxPatternLen = 200
	// DefaultLimit is the number of results when none is asked for.
	DefaultLimit = 5
	// MaxLimit is the most results one search returns.
	MaxLimit = 10000
)

// Options shape one search.
type Options struct {
	// Limit is the most results to return: 0 means DefaultLimit, and values above
	// MaxLimit are cut to it. Policies clamp further (see policy.Config.Limit).
	Limit int
	// Allow limits the search to a set of tools (a session's scope, the deferred tools);
	// nil means every tool.
	Allow *catalog.Set
	// Budget bounds the time of a regex search; 0 means DefaultRegexBudget. BM25 searches
	// need no bound: they take microseconds.
	Budget time.Duration
}

func (o Options) limit() int {
	switch {
	case o.Limit <= 0:
		return DefaultLimit
	case o.Limit > MaxLimit:
		return MaxLimit
	}
	return o.Limit
}

// How a result was found.
const (
	MatchExact     = "exact"     // the query is the tool's name
	MatchBM25      = "bm25"      // ranked by BM25F
	MatchSubstring = "substring" // fallback: the query is part of the tool's name
	MatchRegex     = "regex"     // the pattern matched one of the tool's fields
)

// Result is one tool found, best first.
type Result struct {
	Tool  *catalog.Tool
	Score float64
	// Match says how the tool was found (MatchExact, MatchBM25, ...).
	Match string
	// Field names what a regex matched: "name", "title", "description", "parameter" or
	// "server". Empty for other matches.
	Field string
}

// scratch is the per-search working memory, pooled so a search allocates almost nothing.
type scratch struct {
	score   []float32
	hits    []uint8
	touched []int32
	terms   []queryTerm
	coord   []float32 // coordination factor by number of matched terms
	buf     []byte
}

type queryTerm struct {
	id     int32
	weight float32
}

var scratchPools sync.Map // catalog size -> *sync.Pool

func (ix *Index) scratch() *scratch {
	n := ix.snap.Len()
	p, _ := scratchPools.LoadOrStore(n, &sync.Pool{New: func() any {
		return &scratch{score: make([]float32, n), hits: make([]uint8, n)}
	}})
	return p.(*sync.Pool).Get().(*scratch)
}

func (ix *Index) release(s *scratch) {
	for _, d := range s.touched {
		s.score[d] = 0
		s.hits[d] = 0
	}
	s.touched = s.touched[:0]
	s.terms = s.terms[:0]
	p, _ := scratchPools.Load(len(s.score))
	p.(*sync.Pool).Put(s)
}

// Truncate cuts text to at most max characters, at a word boundary when one is near, the
// way a client should shorten an over-long query before sending it rather than have it
// rejected.
func Truncate(text string, max int) string {
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	cut, n := 0, 0
	for i := range text {
		if n == max {
			cut = i
			break
		}
		n++
	}
	if sp := strings.LastIndexAny(text[:cut], " \t\n"); sp > cut*3/4 {
		cut = sp
	}
	return strings.TrimSpace(text[:cut])
}

// checkQuery validates a BM25 query.
func checkQuery(query string) error {
	if strings.TrimSpace(query) == "" {
		return Errorf(InvalidToolInput, "the query is empty; describe the tool you need in a few words, such as \"create github issue\"")
	}
	if n := utf8.RuneCountInString(query); n > MaxQueryLen {
		return Errorf(InvalidToolInput, "the query is %d characters; the limit is %d, so keep only the words that describe the tool", n, MaxQueryLen)
	}
	return nil
}

// Search ranks tools against a natural-language query with BM25F. A query that is a
// tool's exact name (bare or qualified; case, spaces, '-' and '_' ignored) puts that tool
// first. When no tool scores, it falls back to tools whose name contains the query or one
// of its words. An empty or over-long query is an InvalidToolInput error.
func (ix *Index) Search(query string, opts Options) ([]Result, error) {
	if err := checkQuery(query); err != nil {
		return nil, err
	}
	limit := opts.limit()
	var results []Result
	exact := ix.exact[normalizeName(query)]
	for _, d := range exact {
		if opts.Allow.Has(int(d)) && len(results) < limit {
			results = append(results, Result{Tool: ix.snap.Tool(int(d)), Score: math.Inf(1), Match: MatchExact})
		}
	}
	nExact := len(results)
	for _, r := range ix.ranked(query, opts.Allow, limit) {
		if len(results) == limit {
			break
		}
		if !containsTool(results[:nExact], r.Tool) {
			results = append(results, r)
		}
	}
	if len(results) == 0 {
		results = ix.substring(query, opts.Allow, limit)
	}
	return results, nil
}

// ranked scores every tool against text and returns the best k.
func (ix *Index) ranked(text string, allow *catalog.Set, k int) []Result {
	s := ix.scratch()
	defer ix.release(s)
	ix.queryTerms(text, s)
	for _, qt := range s.terms {
		start, end := ix.postStart[qt.id], ix.postStart[qt.id+1]
		docs, scores := ix.postDoc[start:end], ix.postScore[start:end]
		for i, d := range docs {
			if s.hits[d] == 0 {
				s.touched = append(s.touched, d)
			}
			s.score[d] += qt.weight * scores[i]
			if s.hits[d] < math.MaxUint8 {
				s.hits[d]++
			}
		}
	}
	if c := ix.params.Coord; c != 0 && len(s.terms) > 1 {
		nq := min(len(s.terms), math.MaxUint8)
		s.coord = s.coord[:0]
		for h := 0; h <= nq; h++ {
			s.coord = append(s.coord, float32(math.Pow(float64(h)/float64(nq), c)))
		}
		for _, d := range s.touched {
			s.score[d] *= s.coord[min(int(s.hits[d]), nq)]
		}
	}
	return ix.topK(s, allow, k)
}

func containsTool(rs []Result, t *catalog.Tool) bool {
	for _, r := range rs {
		if r.Tool == t {
			return true
		}
	}
	return false
}

// queryTerms analyzes the query into s.terms: each known term once, weighted by its idf
// and by how often the query repeats it, then the terms the thesaurus and file paths
// imply, at their reduced weights.
func (ix *Index) queryTerms(query string, s *scratch) {
	p := &ix.params
	var unknown []string
	s.buf = tokenize(query, s.buf, func(tok []byte, _ uint64) {
		if term := stemBytes(tok); term != "" {
			if !ix.addTerm(s, term, 1) && p.Synonyms > 0 {
				unknown = append(unknown, term)
			}
		} else if p.Questions > 0 {
			for _, w := range questionWords[string(tok)] {
				ix.addTerm(s, normalize(w), float32(p.Questions))
			}
		}
	})
	if p.Prefix > 0 {
		for _, qt := range s.terms[:len(s.terms):len(s.terms)] {
			term := ix.termText[qt.id]
			for n := 4; n < len(term)-1; n++ {
				ix.addTerm(s, term[:n], float32(p.Prefix))
			}
		}
		for _, term := range unknown {
			for n := 4; n < len(term)-1; n++ {
				ix.addTerm(s, term[:n], float32(p.Prefix))
			}
		}
	}
	// Words no tool uses get the thesaurus's help; words some tool uses are trusted.
	for _, term := range unknown {
		for _, syn := range synonyms[term] {
			ix.addTerm(s, syn, float32(p.Synonyms))
		}
	}
	if p.PathWords > 0 {
		for _, w := range strings.Fields(query) {
			if looksLikePath(strings.Trim(w, ".,;:!?()[]{}'\"`")) {
				for _, t := range pathWords {
					ix.addTerm(s, t, float32(p.PathWords))
				}
				break
			}
		}
	}
}

// addTerm adds a term to the query with weight factor f, if the catalog has it. A term
// already present keeps its larger weight when it comes again from the thesaurus, and
// adds up when the query itself repeats it.
func (ix *Index) addTerm(s *scratch, term string, f float32) bool {
	id, ok := ix.terms[term]
	if !ok {
		return false
	}
	w := f * ix.idf[id]
	for i := range s.terms {
		if s.terms[i].id == id {
			if f == 1 {
				s.terms[i].weight += w
			} else if w > s.terms[i].weight {
				s.terms[i].weight = w
			}
			return true
		}
	}
	s.terms = append(s.terms, queryTerm{id: id, weight: w})
	return true
}

// topK returns the best limit scored documents that allow admits, best first; ties go to
// the earlier tool in the catalog so results are stable.
func (ix *Index) topK(s *scratch, allow *catalog.Set, limit int) []Result {
	// h is a min-heap of candidates: h[0] is the weakest kept, the first to go.
	type cand struct {
		score float32
		doc   int32
	}
	weaker := func(a, b cand) bool { return a.score < b.score || a.score == b.score && a.doc > b.doc }
	h := make([]cand, 0, min(limit, len(s.touched)))
	for _, d := range s.touched {
		sc := s.score[d]
		if sc <= 0 || len(h) == limit && (sc < h[0].score || sc == h[0].score && d > h[0].doc) || !allow.Has(int(d)) {
			continue
		}
		c := cand{sc, d}
		if len(h) < limit {
			h = append(h, c)
			for i := len(h) - 1; i > 0; { // sift up
				p := (i - 1) / 2
				if !weaker(h[i], h[p]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
			continue
		}
		h[0] = c
		for i := 0; ; { // sift down
			l, m := 2*i+1, i
			if l < len(h) && weaker(h[l], h[m]) {
				m = l
			}
			if l+1 < len(h) && weaker(h[l+1], h[m]) {
				m = l + 1
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	sort.Slice(h, func(i, j int) bool { return weaker(h[j], h[i]) })
	out := make([]Result, len(h))
	for i, c := range h {
		out[i] = Result{Tool: ix.snap.Tool(int(c.doc)), Score: float64(c.score), Match: MatchBM25}
	}
	return out
}

// substring is the fallback when nothing scores: tools whose normalized name contains the
// normalized query, else one of the query's words of three or more characters. Tools
// matching more words come first, then shorter names.
func (ix *Index) substring(query string, allow *catalog.Set, limit int) []Result {
	q := normalizeName(query)
	if q == "" {
		return nil
	}
	words := []string{q}
	for _, w := range strings.Split(q, "_") {
		if len(w) >= 3 && w != q {
			words = append(words, w)
		}
	}
	type cand struct {
		doc, hits int
	}
	var cands []cand
	for d, name := range ix.names {
		if !allow.Has(d) {
			continue
		}
		hits := 0
		if strings.Contains(name, q) {
			hits = len(words) + 1
		} else {
			for _, w := range words[1:] {
				if strings.Contains(name, w) {
					hits++
				}
			}
		}
		if hits > 0 {
			cands = append(cands, cand{d, hits})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].hits != cands[j].hits {
			return cands[i].hits > cands[j].hits
		}
		return len(ix.names[cands[i].doc]) < len(ix.names[cands[j].doc])
	})
	var out []Result
	for _, c := range cands {
		if len(out) == limit {
			break
		}
		out = append(out, Result{Tool: ix.snap.Tool(c.doc), Score: float64(c.hits), Match: MatchSubstring})
	}
	return out
}
