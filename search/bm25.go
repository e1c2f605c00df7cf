package search

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
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
	MatchNamed     = "named"     // the query names the tool among other words
	MatchBM25      = "bm25"      // ranked by BM25F
	MatchSubstring = "substring" // fallback: the query is part of the tool's name
	MatchFuzzy     = "fuzzy"     // last fallback: the query's words are misspellings of the tool's terms
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
	bound   []float32 // the most the query's remaining terms can add
	cands   []int32   // tools still able to reach the top k
	bits    []uint64  // one bit a tool, all zero between uses: sortDocs' bit set
	kth     []scored  // heap for kthScore: the best k it found

	rescore   []scored  // rescored's candidates
	qgrams    gramTable // the query's 4-grams, for rescored
	qgramList []uint32  // the same, in a list
	gramText  []byte    // the query's gram text, for rescored

	words     queryWords // queryTerms' state
	tokenizer worker     // the build's tokenizer, handing words to words
}

// scored is a tool and its score.
type scored struct {
	score float32
	doc   int32
}

type queryTerm struct {
	id     int32
	weight float32
}

var scratchPools sync.Map // catalog size -> *sync.Pool

func (ix *Index) scratch() *scratch {
	n := ix.snap.Len()
	p, _ := scratchPools.LoadOrStore(n, &sync.Pool{New: func() any {
		return &scratch{score: make([]float32, n), hits: make([]uint8, n), bits: make([]uint64, (n+63)/64)}
	}})
	return p.(*sync.Pool).Get().(*scratch)
}

// clearScores zeroes the scores and hits of the touched tools: one by one when they are
// few, else all at once, which is faster than scattered writes from about one in eight.
func (s *scratch) clearScores() {
	if len(s.touched) < len(s.score)/8 {
		for _, d := range s.touched {
			s.score[d], s.hits[d] = 0, 0
		}
		return
	}
	clear(s.score)
	clear(s.hits)
}

// release returns s to its pool. topK has already zeroed the scores it read.
func (ix *Index) release(s *scratch) {
	s.touched = s.touched[:0]
	s.terms = s.terms[:0]
	s.words.ix, s.words.s = nil, nil // a pooled scratch must not keep an index alive
	s.words.fuzzy = false
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

// Shorten fits a query into max characters keeping as much of what ranks as it can:
// when the query is too long, it first drops the words the search ignores (stop words
// such as "the", "could", "please", except the question words it reads), then cuts what
// is still too long at a word boundary with Truncate. A query that fits is returned as
// it is.
func Shorten(query string, max int) string {
	if utf8.RuneCountInString(query) <= max {
		return query
	}
	var b strings.Builder
	for w := range strings.FieldsSeq(query) {
		if lw := strings.ToLower(strings.TrimFunc(w, isPunct)); stopWords[lw] && questionWords[lw] == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return Truncate(b.String(), max)
}

// checkQuery validates a BM25 query.
func checkQuery(query string) error {
	if strings.TrimSpace(query) == "" {
		return Errorf(InvalidToolInput, "the query is empty; describe the tool you need in a few words, such as \"create github issue\"")
	}
	// A query has no more characters than bytes, so most need no count.
	if len(query) <= MaxQueryLen {
		return nil
	}
	if n := utf8.RuneCountInString(query); n > MaxQueryLen {
		return Errorf(InvalidToolInput, "the query is %d characters; the limit is %d, so keep only the words that describe the tool", n, MaxQueryLen)
	}
	return nil
}

// Search ranks tools against a natural-language query with BM25F. A query that is a
// tool's exact name (bare or qualified; case, spaces, '-' and '_' ignored) puts that tool
// first; so does a word of the query written as an identifier (sort_list, getWeather,
// github.create-issue) that is a tool's exact name, in the order the query names them.
// When no tool scores, it falls back to tools whose name contains the query or one
// of its words, and failing that reads the query's words as misspellings of terms the
// catalog uses (see fuzzy). An empty or over-long query is an InvalidToolInput error.
func (ix *Index) Search(query string, opts Options) ([]Result, error) {
	if err := checkQuery(query); err != nil {
		return nil, err
	}
	limit := opts.limit()
	var results []Result
	sh := shapeOf(query)
	exact := ix.exactQuery(query, sh)
	for _, d := range exact {
		if opts.Allow.Has(int(d)) && len(results) < limit {
			results = append(results, Result{Tool: ix.snap.Tool(int(d)), Score: math.Inf(1), Match: MatchExact})
		}
	}
	for _, d := range ix.named(query, sh) {
		if opts.Allow.Has(int(d)) && len(results) < limit && !containsTool(results, ix.snap.Tool(int(d))) {
			results = append(results, Result{Tool: ix.snap.Tool(int(d)), Score: math.Inf(1), Match: MatchNamed})
		}
	}
	nExact := len(results)
	if ranked := ix.ranked(query, sh, opts.Allow, limit); nExact == 0 {
		results = ranked // the usual case: nothing to merge
	} else {
		for _, r := range ranked {
			if len(results) == limit {
				break
			}
			if !containsTool(results[:nExact], r.Tool) {
				results = append(results, r)
			}
		}
	}
	if len(results) == 0 {
		results = ix.substring(query, opts.Allow, limit)
	}
	if len(results) == 0 {
		results = ix.fuzzy(query, sh, opts.Allow, limit)
	}
	return results, nil
}

// named returns the tools a query names among its words: each word that is written as
// an identifier and is, normalized, a tool's bare or qualified name. A plain word such
// as "translate" does not count, even when a tool has that name: in a sentence it is far
// more often just the word.
func (ix *Index) named(query string, sh queryShape) []int32 {
	if !sh.ident {
		return nil
	}
	var docs []int32
	for w := range strings.FieldsSeq(query) {
		if !mayBeIdentifier(w) {
			continue // most words: a plain word
		}
		w = strings.TrimFunc(w, isPunct)
		if len(w) < 3 || !isIdentifier(w) {
			continue
		}
		forms := [2]string{normalizeName(w), ""}
		if hasCamel(w) {
			forms[1] = normalizeName(snakeCase(w)) // getForecast names get_forecast too
		}
		for _, form := range forms {
			for _, d := range ix.lookupExact(form) {
				if !slices.Contains(docs, d) {
					docs = append(docs, d)
				}
			}
		}
	}
	return docs
}

// isIdentifier reports whether w is written as a programmer writes a name: letters and
// digits joined by '_', '.' or '-', or in camelCase, and starting with a letter.
func isIdentifier(w string) bool {
	if !isLower(w[0]) && !isUpper(w[0]) {
		return false
	}
	joined := false
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c == '_' || c == '.' || c == '-':
			if i == len(w)-1 {
				return false
			}
			joined = true
		case !isASCIIAlnum(c):
			return false
		}
	}
	return joined || hasCamel(w)
}

// snakeCase writes a camelCase identifier in snake_case: getHTTPResponse becomes
// get_HTTP_Response (normalizeName then lowercases it).
func snakeCase(w string) string {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if i > 0 && splitsAt(w, i) {
			b.WriteByte('_')
		}
		b.WriteByte(w[i])
	}
	return b.String()
}

// mayBeIdentifier reports whether s may have a word that isIdentifier: a '_', '.' or '-'
// inside a word, or camelCase.
func mayBeIdentifier(s string) bool { return shapeOf(s).ident }

// queryShape is what one pass over a query's bytes tells Search about the analyses that
// cost more than the pass: most queries are plain sentences, which it rules out of the
// scans for identifiers and file paths and, when long, of the exact-name lookup.
type queryShape struct {
	ident bool // a '_', '.' or '-' before a letter or digit, or camelCase: a word may be an identifier
	path  bool // a '/' or '\', or a '.' before a letter or digit: a word may be a file path
	alnum int  // ASCII letters and digits
}

// Kinds of bytes for shapeOf, and what a pair of them, or the second alone, shows.
const (
	kindOther = iota
	kindLower
	kindUpper
	kindDigit
	kindJoin  // '_' or '-'
	kindDot   // '.'
	kindSlash // '/' or '\'

	shapeIdent = 1 << 0
	shapePath  = 1 << 1
	shapeAlnum = 1 << 2
)

var shapeKind = func() (t [256]uint8) {
	for c := range t {
		switch cls := asciiClass[c]; {
		case cls == clsLower:
			t[c] = kindLower
		case cls == clsUpper:
			t[c] = kindUpper
		case cls == clsDigit:
			t[c] = kindDigit
		case c == '_' || c == '-':
			t[c] = kindJoin
		case c == '.':
			t[c] = kindDot
		case c == '/' || c == '\\':
			t[c] = kindSlash
		}
	}
	return t
}()

// shapePair[prev<<3|cur] is what a byte of kind cur after one of kind prev shows.
var shapePair = func() (t [64]uint8) {
	for prev := range 8 {
		for cur := range 8 {
			var f uint8
			switch cur {
			case kindLower, kindUpper, kindDigit:
				f = shapeAlnum
				switch {
				case prev == kindJoin:
					f |= shapeIdent
				case prev == kindDot:
					f |= shapeIdent | shapePath
				case prev == kindLower && cur == kindUpper:
					f |= shapeIdent
				}
			case kindSlash:
				f = shapePath
			}
			t[prev<<3|cur] = f
		}
	}
	return t
}()

// shapeOf takes a query's shape in one pass, without a branch on its bytes.
func shapeOf(s string) queryShape {
	var flags uint8
	n, prev := 0, uint8(kindOther)
	for i := 0; i < len(s); i++ {
		k := shapeKind[s[i]]
		f := shapePair[prev<<3|k]
		flags |= f
		n += int(f >> 2 & 1)
		prev = k
	}
	return queryShape{ident: flags&shapeIdent != 0, path: flags&shapePath != 0, alnum: n}
}

// hasCamel reports whether s has a lowercase letter followed by an uppercase one.
func hasCamel(s string) bool {
	for i := 1; i < len(s); i++ {
		if isUpper(s[i]) && isLower(s[i-1]) {
			return true
		}
	}
	return false
}

// maxTerms is the most terms ranked scores a query by, so that a tool's count of matched
// terms fits a uint8. Only a query of hundreds of distinct words reaches it.
const maxTerms = math.MaxUint8

// capTerms returns terms, or its maxTerms weightiest when it has more, reordering terms
// to find them; then a tool's count of matched terms fits its uint8.
func capTerms(terms []queryTerm) []queryTerm {
	if len(terms) <= maxTerms {
		return terms
	}
	slices.SortFunc(terms, func(a, b queryTerm) int { return cmp.Compare(b.weight, a.weight) })
	return terms[:maxTerms]
}

// longPostings is the posting-list length from which ranked considers skipping a term's
// postings for tools that can no longer reach the top k.
const longPostings = 256

// ranked scores every tool against text and returns the best k (see rank).
func (ix *Index) ranked(text string, sh queryShape, allow *catalog.Set, k int) []Result {
	s := ix.scratch()
	defer ix.release(s)
	ix.queryTerms(text, sh, s)
	return ix.rank(s, text, allow, k)
}

// rank scores every tool against the query terms in s.terms and returns the best k.
//
// It accumulates term at a time, rarest terms first. Before each long posting list it
// checks whether the terms left could lift a tool not yet seen into the top k (the
// MaxScore idea, with the cap coordination puts on a tool that can match only the terms
// left): once they cannot, the remaining terms are only looked up for the tools
// that can still make it, by binary search instead of a full scan. The result is exactly
// that of scoring every posting.
//
// With 4-grams (Params.Grams above 0) the k-th best score is divided by the most the
// 4-grams can raise a score (Index.boost) before it prunes: a tool below that can still
// be lifted into the top k by rescored, which then reorders the candidates by them.
func (ix *Index) rank(s *scratch, query string, allow *catalog.Set, k int) []Result {
	s.kth = s.kth[:0]
	terms := capTerms(s.terms)
	nq := len(terms)
	// Rarest first: short lists, which carry the high weights, settle the top k early.
	for i := 1; i < nq; i++ {
		for j := i; j > 0 && ix.postingLen(terms[j].id) < ix.postingLen(terms[j-1].id); j-- {
			terms[j], terms[j-1] = terms[j-1], terms[j]
		}
	}
	// bound[i] is the most the terms from i on can add to one tool's score.
	s.bound = s.bound[:0]
	for range nq + 1 {
		s.bound = append(s.bound, 0)
	}
	for i := nq - 1; i >= 0; i-- {
		s.bound[i] = s.bound[i+1] + terms[i].weight*ix.maxScore[terms[i].id]
	}
	ix.coordTable(s, nq)

	// A tool not yet seen can match at most the terms left, so coordination caps what
	// it can reach at unseen(i) = bound[i] * coord[terms left]: the factors grow with
	// the matched count and none is above 1.
	unseen := func(i int) float32 { return s.bound[i] * s.coord[nq-i] }
	boost := ix.boost()
	i := 0
	threshold := float32(0)
	checked := float32(math.MaxFloat32) // unseen at the last check; rechecked at half
	for ; i < nq; i++ {
		qt := terms[i]
		if ix.postingLen(qt.id) >= longPostings && len(s.touched) >= k && unseen(i) <= checked/2 {
			checked = unseen(i)
			// The tools kept at the last check, rescored, often already settle it.
			if kept := s.keptKth(k) / boost; kept > checked {
				threshold = kept
				break
			}
			threshold = ix.kthScore(s, allow, k) / boost
			if threshold > 0 && checked < threshold {
				break
			}
		}
		start, end := ix.postStart[qt.id], ix.postStart[qt.id+1]
		docs, scores := ix.postDoc[start:end], ix.postScore[start:end]
		for j, d := range docs {
			h := s.hits[d]
			if h == 0 {
				s.touched = append(s.touched, d)
			}
			s.hits[d] = h + 1
			s.score[d] += qt.weight * scores[j]
		}
	}
	if i < nq {
		// Only tools whose score plus everything still to come, coordinated as if they
		// matched every term left, reaches the k-th best can finish in the top k; the
		// others keep their partial scores and stay out.
		cands := s.cands[:0]
		rest := s.bound[i]
		for _, d := range s.touched {
			// Coordination only lowers a score: most tools fail on the raw sum alone.
			if raw := s.score[d] + rest; raw >= threshold && raw*s.coord[min(nq, int(s.hits[d])+nq-i)] >= threshold {
				cands = append(cands, d)
			}
		}
		few := len(cands) <= 256
		if few {
			cands = sortDocs(cands, s.bits)
		}
		for _, qt := range terms[i:] {
			start, end := ix.postStart[qt.id], ix.postStart[qt.id+1]
			docs := ix.postDoc[start:end]
			if !few || len(cands)*8 >= len(docs) {
				// Many candidates: one scan, adding only to tools already seen.
				for j, d := range docs {
					if h := s.hits[d]; h != 0 {
						s.score[d] += qt.weight * ix.postScore[int(start)+j]
						s.hits[d] = h + 1
					}
				}
				continue
			}
			lo := 0
			for _, d := range cands {
				lo = lowerBound(docs, lo, d)
				if lo == len(docs) {
					break
				}
				if docs[lo] == d {
					s.score[d] += qt.weight * ix.postScore[int(start)+lo]
					s.hits[d]++
				}
			}
		}
		s.cands = cands
		return ix.best(s, query, cands, allow, k)
	}
	return ix.best(s, query, s.touched, allow, k)
}

// boost is the most the 4-grams can multiply a score by: 1 + Params.Grams, or 1 when
// the index has none.
func (ix *Index) boost() float32 {
	if ix.grams == nil {
		return 1
	}
	return float32(1 + ix.params.Grams)
}

// best returns the best limit of docs, scored, by topK or, with 4-grams, rescored.
func (ix *Index) best(s *scratch, query string, docs []int32, allow *catalog.Set, limit int) []Result {
	if ix.grams == nil {
		return ix.topK(s, docs, allow, limit)
	}
	return ix.rescored(s, query, docs, allow, limit)
}

// sortDocs sorts tool numbers in place through set, a bit set of the tools, all zero: a
// bit set for each, then the words between the lowest and highest read back in order.
// For the few hundred candidates ranked sorts, that is several times cheaper than a
// comparison sort. Repeated numbers come out once, so it returns the sorted numbers as a
// prefix of docs. It leaves set all zero.
func sortDocs(docs []int32, set []uint64) []int32 {
	if len(docs) == 0 {
		return docs
	}
	lo, hi := len(set), 0
	for _, d := range docs {
		w := int(d >> 6)
		set[w] |= 1 << (d & 63)
		lo, hi = min(lo, w), max(hi, w)
	}
	out := docs[:0]
	for w := lo; w <= hi; w++ {
		for b := set[w]; b != 0; b &= b - 1 {
			out = append(out, int32(w<<6|bits.TrailingZeros64(b)))
		}
		set[w] = 0
	}
	return out
}

// lowerBound returns the first index from lo on where docs, which is sorted, holds d or
// more; len(docs) if there is none. Candidates come in order, so each search starts where
// the last one ended.
func lowerBound(docs []int32, lo int, d int32) int {
	for n := len(docs) - lo; n > 0; {
		half := n >> 1
		if docs[lo+half] < d {
			lo += half + 1
			n -= half + 1
		} else {
			n = half
		}
	}
	return lo
}

func (ix *Index) postingLen(t int32) int32 { return ix.postStart[t+1] - ix.postStart[t] }

// coordTable fills s.coord: the coordination factor by number of matched terms out of nq.
// A tool matches each query term at most once, so hits never exceed nq, which capTerms
// keeps within maxTerms.
func (ix *Index) coordTable(s *scratch, nq int) {
	s.coord = s.coord[:0]
	if nq < len(ix.coords) {
		s.coord = append(s.coord, ix.coords[nq]...)
		return
	}
	s.coord = appendCoord(s.coord, nq, ix.params.Coord)
}

// appendCoord appends the coordination factors of 0 to nq matched terms out of nq. None
// is above 1 (a c that is not positive gives all 1), which ranked's pruning and the
// shortcuts of kthScore and topK rely on: a tool's final score is at most its raw one.
func appendCoord(dst []float32, nq int, c float64) []float32 {
	for h := 0; h <= nq; h++ {
		f := float32(1)
		if c > 0 && nq > 1 {
			f = float32(math.Pow(float64(h)/float64(nq), c))
		}
		dst = append(dst, f)
	}
	return dst
}

// kthScore returns the k-th best current final score among the touched tools that allow
// admits, or 0 when fewer than k have a score. Scores only grow as terms are added, so it
// is a lower bound of the final k-th best.
func (ix *Index) kthScore(s *scratch, allow *catalog.Set, k int) float32 {
	h := s.kth[:0]
	for _, d := range s.touched {
		raw := s.score[d]
		if len(h) == k && raw <= h[0].score {
			continue // coordination only lowers a score: most tools stop here
		}
		sc := raw * s.coord[s.hits[d]]
		if sc <= 0 || !allow.Has(int(d)) {
			continue
		}
		h = keepBest(h, scored{sc, d}, k)
	}
	s.kth = h
	if len(h) < k {
		return 0
	}
	return h[0].score
}

// weaker orders tools for the top k: a lower score, or on a tie the later tool.
func weaker(a, b scored) bool { return a.score < b.score || a.score == b.score && a.doc > b.doc }

// keepBest offers c to h, a min-heap by weaker of the best tools so far, at most k: h[0]
// is the weakest kept, the first to go. c comes in while there is room, or in place of
// h[0] if it beats it.
func keepBest(h []scored, c scored, k int) []scored {
	if len(h) < k {
		h = append(h, c)
		for i := len(h) - 1; i > 0; { // sift up
			p := (i - 1) / 2
			if !weaker(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		return h
	}
	if !weaker(h[0], c) {
		return h
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
			return h
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// keptKth returns the lowest current final score of the tools kthScore last kept, or 0
// if it kept fewer than k. Scores only grow, so it too is a lower bound of the final
// k-th best, and it costs k lookups instead of a pass over every touched tool.
func (s *scratch) keptKth(k int) float32 {
	if len(s.kth) < k {
		return 0
	}
	low := float32(math.MaxFloat32)
	for _, c := range s.kth {
		low = min(low, s.score[c.doc]*s.coord[s.hits[c.doc]])
	}
	return low
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
func (ix *Index) queryTerms(query string, sh queryShape, s *scratch) {
	p := &ix.params
	q := &s.words
	*q = queryWords{ix: ix, s: s, unknown: q.unknown[:0], ops: q.ops[:0], buf: q.buf,
		fuzzy: q.fuzzy, misses: q.misses[:0],
		mayPath: (p.PathWords > 0 || p.PathVerbs > 0) && sh.path}
	// The build's tokenizer, so a query is split exactly as the tools were; it hands
	// each word to queryWord instead of counting it.
	w := &s.tokenizer
	if w.query == nil {
		w.query = q
		w.emit = w.emitToken
	}
	w.chinese = false
	w.text(0, query)
	if w.chinese {
		w.glosses(query) // a request in Chinese also asks in English
	}
	if p.Prefix > 0 {
		for _, qt := range s.terms[:len(s.terms):len(s.terms)] {
			term := ix.termText[qt.id]
			for n := 4; n < len(term)-1; n++ {
				ix.addTerm(s, term[:n], float32(p.Prefix))
			}
		}
		for _, term := range q.unknown {
			for n := 4; n < len(term)-1; n++ {
				ix.addTerm(s, term[:n], float32(p.Prefix))
			}
		}
	}
	// Words no tool uses get the thesaurus's help; words some tool uses are trusted.
	for _, term := range q.unknown {
		for _, syn := range synonyms[term] {
			ix.addTerm(s, syn, float32(p.Synonyms))
		}
	}
	if q.mayPath {
		ix.pathTerms(query, q.ops, s)
	}
}

// queryWords is queryTerms' state while the query's words come in.
type queryWords struct {
	ix      *Index
	s       *scratch
	unknown []string    // terms no tool uses, for the thesaurus
	fuzzy   bool        // collect misses, for the fuzzy fallback
	misses  []queryMiss // with fuzzy: the query words no tool uses
	ops     []string    // file operations the query's verbs name (see pathVerbs)
	mayPath bool        // the query may name a file path
	buf     []byte
}

// queryMiss is a query word no tool uses, lowercased, and its stem.
type queryMiss struct{ word, stem string }

// queryWord takes one word of the query: its hashToken and its text, in any case. A
// word the catalog uses is looked up as the build analyzed it, with no stemming.
func queryWord[T string | []byte](q *queryWords, h uint64, tok T) {
	ix, s, p := q.ix, q.s, &q.ix.params
	var term string
	if id, ok := ix.surfaces.lookup(h); ok && id >= 0 {
		ix.addID(s, id, 1)
		term = ix.termText[id]
	} else {
		q.buf = appendLower(q.buf[:0], tok)
		if st := stemOf(q.buf, h); st.text != "" {
			if !ix.addStem(s, st, 1) {
				if p.Synonyms > 0 {
					q.unknown = append(q.unknown, st.text)
				}
				if q.fuzzy {
					q.misses = append(q.misses, queryMiss{string(q.buf), st.text})
				}
			}
			term = st.text
		} else if p.Questions > 0 {
			for _, t := range questionWords[string(q.buf)] {
				ix.addTerm(s, t, float32(p.Questions))
			}
		}
	}
	if !q.mayPath {
		return
	}
	if op, ok := pathVerbs[term]; ok && !slices.Contains(q.ops, op) {
		q.ops = append(q.ops, op)
	}
}

// pathTerms adds what a file path in the query implies: that a tool works on files
// (pathWords, at Params.PathWords) and, when the path is not a URL, the file operation
// the query's verbs ask for (ops, from pathVerbs, at Params.PathVerbs).
func (ix *Index) pathTerms(query string, ops []string, s *scratch) {
	p := &ix.params
	path, local := false, false
	for w := range strings.FieldsSeq(query) {
		if !strings.ContainsAny(w, `./\`) {
			continue // most words: no path
		}
		if w = strings.TrimFunc(w, isPunct); looksLikePath(w) {
			path = true
			local = local || !strings.Contains(w, "://")
		}
	}
	if path {
		for _, t := range pathWords {
			ix.addTerm(s, t, float32(p.PathWords))
		}
	}
	if local && p.PathVerbs > 0 {
		for _, t := range ops {
			ix.addTerm(s, t, float32(p.PathVerbs))
		}
	}
}

// addTerm adds a term the query implies (by the thesaurus, an abbreviation, a path or a
// question word) with weight factor f, if the catalog has it.
func (ix *Index) addTerm(s *scratch, term string, f float32) bool {
	return ix.addStem(s, stemOfText(term), f)
}

// addStem is addTerm for a term whose hash is known.
func (ix *Index) addStem(s *scratch, term stem, f float32) bool {
	id, ok := ix.termID(term)
	if ok {
		ix.addID(s, id, f)
	}
	return ok
}

// addID is addTerm for a term of the index known by its id. A term the query has
// already keeps the larger of its weights: a word said twice counts once, as in BM25
// without query term frequency (k3 = 0). A long request repeats words for grammar's
// sake, and a file path repeats its folders' names ("save it as Markdown to
// /root/markdown/a.md"), not for emphasis; counting repeats made those words outweigh
// the rest (livemcpbench recall@5 0.413 against 0.452, bfcl 0.869 against 0.872).
func (ix *Index) addID(s *scratch, id int32, f float32) {
	w := f * ix.idf[id]
	for i := range s.terms {
		if s.terms[i].id == id {
			s.terms[i].weight = max(s.terms[i].weight, w)
			return
		}
	}
	s.terms = append(s.terms, queryTerm{id: id, weight: w})
}

// topK returns the best limit scored documents that allow admits, best first; ties go to
// the earlier tool in the catalog so results are stable. A document's final score is its
// accumulated score times the coordination factor of its number of matched terms. docs
// are the tools that can make it: every touched one, or ranked's candidates once it has
// ruled out the rest. topK then zeroes every touched tool's score, so the scratch is
// clean for the next search.
func (ix *Index) topK(s *scratch, docs []int32, allow *catalog.Set, limit int) []Result {
	h := make([]scored, 0, min(limit, len(docs)))
	coord := s.coord
	for _, d := range docs {
		raw := s.score[d]
		if len(h) == limit && raw < h[0].score {
			continue
		}
		sc := raw * coord[s.hits[d]]
		if sc <= 0 || !allow.Has(int(d)) {
			continue
		}
		h = keepBest(h, scored{sc, d}, limit)
	}
	s.clearScores()
	sortBest(h)
	return ix.results(h)
}

// sortBest sorts tools best first, by weaker.
func sortBest(h []scored) {
	slices.SortFunc(h, func(a, b scored) int {
		if weaker(a, b) {
			return 1
		}
		return -1
	})
}

// results returns the tools of h, in order, as BM25F's results.
func (ix *Index) results(h []scored) []Result {
	out := make([]Result, len(h))
	for i, c := range h {
		out[i] = Result{Tool: ix.snap.Tool(int(c.doc)), Score: float64(c.score), Match: MatchBM25}
	}
	return out
}

// substringWords returns what substring looks for in names: the normalized query
// whole, and its words of three or more characters. Qualified names are ASCII (see
// catalog.Qualify), so a query or word with other characters cannot be part of one and
// is left out (whole is then ""): a query in Korean costs nothing here.
func substringWords(query string) (whole string, parts []string) {
	q := normalizeName(query)
	if isASCII(q) {
		whole = q
	}
	for _, w := range strings.Split(q, "_") {
		if len(w) >= 3 && w != q && isASCII(w) {
			parts = append(parts, w)
		}
	}
	return whole, parts
}

// substring is the fallback when nothing scores: tools whose normalized name contains the
// normalized query, else one of the query's words of three or more characters. Tools
// matching more words come first, then shorter names, then catalog order.
//
// A word is looked for only in the names that have every pair of adjacent bytes it has,
// as far as the gram bits tell (see gramBit): a few ANDs of sets of tools rule out
// nearly all names before any is searched.
func (ix *Index) substring(query string, allow *catalog.Set, limit int) []Result {
	whole, parts := substringWords(query)
	if whole == "" && len(parts) == 0 {
		return nil
	}
	names, gramTools := ix.qualifiedNames()
	n := len(names)
	k := (n + 63) / 64
	maybe := make([]uint64, k)
	// find calls hit for each tool in scope whose name contains w.
	find := func(w string, hit func(d int)) {
		for i := range maybe {
			maybe[i] = ^uint64(0)
		}
		for i := 0; i+1 < len(w); i++ {
			set := gramTools[gramBit(w[i], w[i+1])*k:][:k]
			for j := range maybe {
				maybe[j] &= set[j]
			}
		}
		for j, bits64 := range maybe {
			for ; bits64 != 0; bits64 &= bits64 - 1 {
				d := j*64 + bits.TrailingZeros64(bits64)
				if d < n && allow.Has(d) && strings.Contains(names[d], w) {
					hit(d)
				}
			}
		}
	}
	full := len(parts) + 2 // the score of a name that contains the whole query
	hits := map[int]int{}  // tool -> score: the words its name contains, or full
	if whole != "" {
		find(whole, func(d int) { hits[d] = full })
	}
	for _, w := range parts {
		find(w, func(d int) { hits[d] = min(hits[d]+1, full) })
	}
	cands := make([]int, 0, len(hits))
	for d := range hits {
		cands = append(cands, d)
	}
	slices.SortFunc(cands, func(a, b int) int {
		if hits[a] != hits[b] {
			return cmp.Compare(hits[b], hits[a])
		}
		if la, lb := len(names[a]), len(names[b]); la != lb {
			return cmp.Compare(la, lb)
		}
		return cmp.Compare(a, b)
	})
	out := make([]Result, 0, min(limit, len(cands)))
	for _, d := range cands[:cap(out)] {
		out = append(out, Result{Tool: ix.snap.Tool(d), Score: float64(hits[d]), Match: MatchSubstring})
	}
	return out
}

// isASCII reports whether s has only ASCII bytes.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
