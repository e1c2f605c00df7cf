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
			j, goesOn := asciiWord(s, i)
			if goesOn {
				// The word goes on in non-ASCII letters (café): take it whole, as
				// tokenize does.
				dst, i = appendGramRun(dst, s, i)
				continue
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
		if r, size := utf8.DecodeRuneInString(s[i:]); !isWordRune(r) {
			i += size
			continue
		}
		dst, i = appendGramRun(dst, s, i)
	}
	return dst
}

// appendGramRun appends the run of letters and digits of any script that starts at s[i],
// lowercased, and a space to dst, and returns where the run ends. Chinese, written
// without spaces, stays one run, so that its grams span characters.
func appendGramRun(dst []byte, s string, i int) ([]byte, int) {
	start := len(dst)
	if start == 0 {
		dst = append(dst, ' ')
	}
	mark := len(dst)
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) {
			break
		}
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		i += size
	}
	if stopWords[string(dst[mark:])] {
		return dst[:start], i // "İ" lowercases to "i"
	}
	return append(dst, ' '), i
}

// appendGramWord appends the ASCII word w lowercased and a space to dst, unless it is a
// stop word.
func appendGramWord(dst []byte, w string) []byte {
	start := len(dst)
	if start == 0 {
		dst = append(dst, ' ')
	}
	mark := len(dst)
	dst = appendLower(dst, w)
	if len(w) <= maxStopWordLen && stopWords[string(dst[mark:])] {
		return dst[:start]
	}
	return append(dst, ' ')
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

// buildGrams returns every tool's distinct 4-grams, in the order of their first
// appearance in its gram text. It splits the tools into gramParts runs, each made on
// its own goroutine into one array, which the tools' slices share: a build runs it
// beside its own steps, on the cores they leave free. The grams are told apart in a
// gramTable, not by sorting: sorting them took 70 ms of CPU at 10,000 tools, three
// times the rest of the build (bench/README.md), and counting them in the query's table
// needs no order.
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
			var (
				// Texts have about one distinct gram for every one and a half bytes.
				all  = make([]uint32, 0, size*2/3+64)
				text []byte
				tab  gramTable
			)
			ends := make([]int, 0, to-from)
			for d := from; d < to; d++ {
				text = toolGramText(text[:0], tools[d])
				tab.reset(len(text))
				all = tab.appendText(all, text)
				ends = append(ends, len(all))
			}
			// One array of the exact size for the tools' slices to share.
			exact := slices.Clone(all)
			start := 0
			for i, end := range ends {
				grams[from+i] = exact[start:end:end]
				start = end
			}
		})
	}
	wg.Wait()
	return grams
}

// gramTable is a set of grams in an open-addressing table: the query's, in which a
// search counts each candidate's grams, one probe a gram (sorting the query's grams for
// a merge with the tool's cost more than all the probes, bench/README.md); and a tool's
// while a build tells them apart. No gram is 0 (gram text has no NUL byte), so 0 marks
// an empty slot. A gram is its four bytes, the first in the high byte.
type gramTable struct {
	// bits has a bit set for each gram, the top 12 bits of its hash: most of a tool's grams are not the
	// query's, and one test of a bit rules them out, where a probe of slots costs a
	// mispredicted branch.
	bits  [queryGramBits / 64]uint64
	slots []uint32
	shift uint32 // 32 - log2(len(slots))
	n     int    // distinct grams
}

// reset empties t and sizes it for up to n grams, at most two thirds full.
func (t *gramTable) reset(n int) {
	size, bits := 64, uint32(6)
	for size*2 < 3*n {
		size, bits = size*2, bits+1
	}
	if cap(t.slots) >= size {
		t.slots = t.slots[:size]
		clear(t.slots)
	} else {
		t.slots = make([]uint32, size)
	}
	t.shift, t.n = 32-bits, 0
	clear(t.bits[:])
}

// queryGramBits is how many bits gramTable.bits has: a query's few hundred grams leave most
// of them clear.
const queryGramBits = 1 << 12

// gramHashK is the multiplier of gramTable's hashes. Its slot and bit of a gram are both
// the high bits of one product, so a probe costs one multiplication.
const gramHashK = 0x9E3779B1

// appendText adds the 4-grams of text and appends to dst those it did not have, in
// order.
func (t *gramTable) appendText(dst []uint32, text []byte) []uint32 {
	if len(text) < 4 {
		return dst
	}
	mask := uint32(len(t.slots) - 1)
	g := uint32(text[0])<<16 | uint32(text[1])<<8 | uint32(text[2])
	for _, c := range text[3:] {
		g = g<<8 | uint32(c)
		h := g * gramHashK
		for i := h >> t.shift; ; i = (i + 1) & mask {
			if t.slots[i] == g {
				break
			}
			if t.slots[i] == 0 {
				t.slots[i] = g
				t.n++
				b := h >> 20
				t.bits[b>>6] |= 1 << (b & 63)
				dst = append(dst, g)
				break
			}
		}
	}
	return dst
}

// count returns how many of grams, which are distinct, t has.
func (t *gramTable) count(grams []uint32) int {
	mask := uint32(len(t.slots) - 1)
	n := 0
	for _, g := range grams {
		h := g * gramHashK
		if b := h >> 20; t.bits[b>>6]&(1<<(b&63)) == 0 {
			continue
		}
		for i := h >> t.shift; ; i = (i + 1) & mask {
			if s := t.slots[i]; s == g {
				n++
				break
			} else if s == 0 {
				break
			}
		}
	}
	return n
}

// queryGrams fills s.qgrams with the query's distinct 4-grams, its text read as a tool's
// (see appendGramText), with the glosses of its Chinese words.
func (s *scratch) queryGrams(query string) *gramTable {
	s.gramText = appendGlossText(appendGramText(s.gramText[:0], query), query)
	s.qgrams.reset(len(s.gramText))
	s.qgramList = s.qgrams.appendText(s.qgramList[:0], s.gramText)
	return &s.qgrams
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
	// One pass keeps the best limit scores in h, whose weakest divided by boost is the
	// floor no tool below can rise from, and every tool at or above the floor as it was
	// when the tool came: the floor only rises, so the tools at or above the final one
	// are all kept.
	h, c := s.kth[:0], s.rescore[:0]
	floor := float32(0)
	for _, d := range docs {
		raw := s.score[d]
		if raw < floor {
			continue // coordination only lowers a score: most tools stop here
		}
		sc := raw * coord[s.hits[d]]
		if sc < floor || sc <= 0 || !allow.Has(int(d)) {
			continue
		}
		t := scored{sc, d}
		c = append(c, t)
		if len(h) < limit || weaker(h[0], t) {
			if h = keepBest(h, t, limit); len(h) == limit {
				floor = h[0].score / boost
			}
		}
	}
	s.kth = h
	s.clearScores()
	// BM25F's first top (or limit, if more) at or above the final floor, best first.
	kept := c[:0]
	for _, t := range c {
		if t.score >= floor {
			kept = append(kept, t)
		}
	}
	c = kept
	s.rescore = c
	sortBest(c)
	c = c[:min(len(c), max(top, limit))]
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
			if q.n > 0 {
				share = float32(q.count(ix.grams[t.doc])) / float32(q.n)
			}
			out = keepBest(out, scored{t.score * (1 + float32(p.Grams)*share), t.doc}, keep)
		}
		sortBest(out)
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
	return ix.results(out)
}
