package search

import (
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/gloss"
)

// Character 4-grams let a query meet a tool through the parts of words that BM25F's
// whole terms miss: a compound written as one word ("websearch" against web_search), a
// misspelling ("wether forcast"), a stem the stemmer did not merge. With Params.Grams
// above 0, the index keeps each tool's distinct 4-grams, and a search reorders BM25F's
// first Params.GramsTop results by score × (1 + Grams × share), where share is the part
// of the query's distinct 4-grams that the tool's text has. BM25F still decides which
// tools are candidates: the 4-grams only reorder them, at a low weight, so a tool that
// shares no word with the query is never found by its letters alone.
//
// A tool's gram text is its name (and operator aliases), title (and keywords) and
// description: what it does, in its own words; parameters describe its input, and were
// no help as gram text (bench/README.md). The text is split into words as the analyzer
// splits them (snake_case, camelCase, letters from digits), lowercased, stop words
// dropped (they say nothing about the tool, and their grams, " the", "for ", would match
// every text), and written with one space between words and one at each end, so that a
// word's first and last letters make grams of their own (" web", "web ") and a compound
// meets its parts ("websearch" and "web search" share " web", "sear", "arch", "rch ").
// Chinese descriptions add their English glosses, as the index does. A gram is its four
// bytes as a uint32, so grams are exact, with no hash to collide.

// appendGramText appends the gram text of s to dst (see above): each word, lowercased,
// followed by a space, the first after a space too when dst is empty.
func appendGramText(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiClass[c] == 0 {
				i++
				continue
			}
			j := i + 1
			for j < len(s) && asciiClass[s[j]] != 0 {
				j++
			}
			w, start := s[i:j], 0
			for k := 1; k <= len(w); k++ {
				if k == len(w) || splitsAt(w, k) {
					dst = appendGramWord(dst, w[start:k])
					start = k
				}
			}
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		// A run of non-ASCII letters is a word, lowercased as unicode does.
		if len(dst) == 0 {
			dst = append(dst, ' ')
		}
		for i < len(s) && s[i] >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if !isWordRune(r) {
				break
			}
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
			i += size
		}
		dst = append(dst, ' ')
	}
	return dst
}

// appendGramWord appends the ASCII word w lowercased and a space to dst, unless it is a
// stop word.
func appendGramWord(dst []byte, w string) []byte {
	if len(dst) == 0 {
		dst = append(dst, ' ')
	}
	mark := len(dst)
	dst = appendLower(dst, w)
	if len(w) <= maxStopWordLen && stopWords[string(dst[mark:])] {
		return dst[:mark]
	}
	return append(dst, ' ')
}

// appendGramSet appends the distinct 4-grams of text to dst, sorted, and returns dst.
// A gram is its four bytes, the first in the high byte.
func appendGramSet(dst []uint32, text []byte) []uint32 {
	from := len(dst)
	if len(text) < 4 {
		return dst
	}
	g := uint32(text[0])<<16 | uint32(text[1])<<8 | uint32(text[2])
	for _, c := range text[3:] {
		g = g<<8 | uint32(c)
		dst = append(dst, g)
	}
	slices.Sort(dst[from:])
	return append(dst[:from], slices.Compact(dst[from:])...)
}

// gramOverlap returns how many grams the sorted sets a and b have in common: one merge
// of the two, without a branch on which is ahead.
func gramOverlap(a, b []uint32) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		x, y := a[i], b[j]
		if x == y {
			n++
		}
		if x <= y {
			i++
		}
		if y <= x {
			j++
		}
	}
	return n
}

// toolGramText appends the gram text of t to dst.
func toolGramText(dst []byte, t *catalog.Tool) []byte {
	dst = appendGramText(dst, t.Name)
	for _, a := range t.Search.Aliases {
		dst = appendGramText(dst, a)
	}
	dst = appendGramText(dst, t.SearchTitle())
	for _, k := range t.Search.Keywords {
		dst = appendGramText(dst, k)
	}
	desc := t.SearchDescription()
	dst = appendGramText(dst, desc)
	return appendGlossText(dst, desc)
}

// appendGlossText appends the gram text of the English glosses of s's Chinese words.
func appendGlossText(dst []byte, s string) []byte {
	var buf []byte
	for i := 0; i < len(s); i++ {
		if gloss.MayStart(s[i]) {
			buf = gloss.Append(nil, s[i:])
			break
		}
	}
	if len(buf) == 0 {
		return dst
	}
	return appendGramText(dst, string(buf))
}

// gramParts is how many parts, each on a goroutine of its own, a build makes the tools'
// grams in.
const gramParts = 4

// buildGrams returns every tool's distinct 4-grams, sorted. It splits the tools into
// gramParts runs, each made on its own goroutine into one array, which the tools' slices
// share: a build runs it beside its own steps, on the cores they leave free.
func buildGrams(tools []*catalog.Tool) [][]uint32 {
	grams := make([][]uint32, len(tools))
	var wg sync.WaitGroup
	for p := range gramParts {
		from, to := len(tools)*p/gramParts, len(tools)*(p+1)/gramParts
		if from == to {
			continue
		}
		wg.Go(func() {
			size := 0
			for _, t := range tools[from:to] {
				size += len(t.Name) + len(t.SearchTitle()) + len(t.SearchDescription())
			}
			// Distinct grams are fewer than bytes: most texts repeat some.
			all := make([]uint32, 0, size*3/4+64)
			var text []byte
			for d := from; d < to; d++ {
				text = toolGramText(text[:0], tools[d])
				start := len(all)
				all = appendGramSet(all, text)
				grams[d] = all[start:len(all):len(all)]
			}
			// An array that grew left the earlier tools' slices in the one before it;
			// that is right, only wasteful, and rare with the room asked for.
		})
	}
	wg.Wait()
	return grams
}

// queryGrams fills s.qgrams with the query's distinct 4-grams, its text read as a tool's
// (see appendGramText), with the glosses of its Chinese words.
func (s *scratch) queryGrams(query string) []uint32 {
	s.gramText = appendGlossText(appendGramText(s.gramText[:0], query), query)
	s.qgrams = appendGramSet(s.qgrams[:0], s.gramText)
	return s.qgrams
}

// rescored is topK for an index with 4-grams (Params.Grams above 0): BM25F's first
// Params.GramsTop tools among docs reordered by score × (1 + Grams × share), share being
// the part of the query's 4-grams each has (see the comment at the top of this file),
// then the rest of the first limit in BM25F's order. It returns the best limit, best
// first, and zeroes the scores as topK does.
//
// Only tools whose BM25F score, raised as far as the 4-grams can raise it, reaches the
// limit-th best score can be among the results: ranked prunes with that bound (see
// Index.relax), and rescored rescores in order of BM25F score and stops at the first
// tool that cannot overtake the limit-th best it has.
func (ix *Index) rescored(s *scratch, query string, docs []int32, allow *catalog.Set, limit int) []Result {
	p := &ix.params
	boost := float32(1 + p.Grams)
	top := max(p.GramsTop, 0)
	coord := s.coord
	// The limit-th best BM25F score: no tool below it, raised by boost, can make it.
	h := s.kth[:0]
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
	floor := float32(0)
	if len(h) == limit {
		floor = h[0].score / boost
	}
	// The candidates: BM25F's first top tools (or limit, if more) at or above floor.
	n := max(top, limit)
	c := s.rescore[:0]
	for _, d := range docs {
		raw := s.score[d]
		if raw < floor || len(c) == n && raw < c[0].score {
			continue
		}
		sc := raw * coord[s.hits[d]]
		if sc < floor || sc <= 0 || !allow.Has(int(d)) {
			continue
		}
		c = keepBest(c, scored{sc, d}, n)
	}
	s.rescore, s.kth = c, h
	s.clearScores()
	slices.SortFunc(c, func(a, b scored) int {
		if weaker(a, b) {
			return 1
		}
		return -1
	})
	rescore := c[:min(top, len(c))]
	out := h[:0]
	if len(rescore) > 0 {
		q := s.queryGrams(query)
		keep := min(limit, len(rescore))
		for _, t := range rescore {
			if len(out) == keep && t.score*boost < out[0].score {
				break // in BM25F order: no later tool can overtake either
			}
			share := float32(0)
			if len(q) > 0 {
				share = float32(gramOverlap(q, ix.grams[t.doc])) / float32(len(q))
			}
			out = keepBest(out, scored{t.score * (1 + float32(p.Grams)*share), t.doc}, keep)
		}
		slices.SortFunc(out, func(a, b scored) int {
			if weaker(a, b) {
				return 1
			}
			return -1
		})
	}
	// Past the rescored tools, BM25F's order: their scores are below every rescored
	// tool's, which the 4-grams only raise.
	for _, t := range c[len(rescore):] {
		if len(out) == limit {
			break
		}
		out = append(out, t)
	}
	s.kth = out
	res := make([]Result, len(out))
	for i, t := range out {
		res[i] = Result{Tool: ix.snap.Tool(int(t.doc)), Score: float64(t.score), Match: MatchBM25}
	}
	return res
}
