package search

import (
	"cmp"
	"slices"

	"github.com/toolshed/toolshed/catalog"
)

// Limits of the fuzzy fallback.
const (
	// fuzzyMinLen is the shortest query word, and the shortest term, in bytes, the
	// fallback considers: shorter words are one edit away from too many others to guess
	// which was meant.
	fuzzyMinLen = 4
	// fuzzyLongLen is the length from which a word may be two edits away, not one.
	fuzzyLongLen = 8
	// maxCorrections is the most terms one misspelled word stands for.
	maxCorrections = 3
)

// fuzzy is Search's last fallback, when no word of the query scores and no tool's name
// contains it: each query word no tool uses stands for the index terms its misspelling
// would be of, so "githb isue" finds the tools of github and issue, and they are ranked
// as if the query had said those terms. A term qualifies when it starts with the same
// letter as the word (misspellings seldom change the first) and is one edit (an
// insertion, deletion, substitution or swap of neighbours) from the word or from its
// stem, or two for words of fuzzyLongLen bytes or more. Only the terms at the smallest
// distance count, at most maxCorrections of them, the ones in the most tools first.
//
// It compares the word only with the terms that start with the same byte (sorted by
// first byte on the first fallback, once), a few hundred even at 10,000 tools; only
// queries that found nothing else pay for it.
func (ix *Index) fuzzy(query string, sh queryShape, allow *catalog.Set, k int) []Result {
	s := ix.scratch()
	defer ix.release(s)
	s.words.fuzzy = true
	ix.queryTerms(query, sh, s)
	// The terms the query has score nothing, or Search would not be here; only the
	// corrections count.
	s.terms = s.terms[:0]
	for _, m := range s.words.misses {
		ix.addCorrections(s, m.word, m.stem)
	}
	if len(s.terms) == 0 {
		return nil
	}
	results := ix.rank(s, query, allow, k)
	for i := range results {
		results[i].Match = MatchFuzzy
	}
	return results
}

// addCorrections adds to s.terms the index terms that word, a lowercased query word no
// tool uses, or its stem may be a misspelling of, as fuzzy describes.
func (ix *Index) addCorrections(s *scratch, word, stem string) {
	if len(word) < fuzzyMinLen {
		return
	}
	most := 1
	if len(word) >= fuzzyLongLen {
		most = 2
	}
	best := most // the smallest distance found so far, or the most allowed
	var found []int32
	for _, id := range ix.termsStartingWith(word[0]) {
		term := ix.termText[id]
		d := min(editDistance(word, term, most), editDistance(stem, term, most))
		if d > best {
			continue
		}
		if d < best {
			best, found = d, found[:0]
		}
		found = append(found, id)
	}
	// The terms in the most tools are the likeliest meant; then the index's order.
	slices.SortStableFunc(found, func(a, b int32) int { return cmp.Compare(ix.postingLen(b), ix.postingLen(a)) })
	for _, id := range found[:min(len(found), maxCorrections)] {
		ix.addID(s, id, 1)
	}
}

// termsStartingWith returns the terms of fuzzyMinLen bytes or more that start with c,
// which the fuzzy fallback compares a word starting with c to. The first call sorts
// every term by its first byte, once for the index.
func (ix *Index) termsStartingWith(c byte) []int32 {
	ix.firstOnce.Do(func() {
		ix.byFirst = new([256][]int32)
		for id, t := range ix.termText {
			if len(t) >= fuzzyMinLen {
				ix.byFirst[t[0]] = append(ix.byFirst[t[0]], int32(id))
			}
		}
	})
	return ix.byFirst[c]
}

// editDistance returns the optimal string alignment distance between a and b (the
// insertions, deletions, substitutions and swaps of adjacent bytes that turn one into
// the other, none applied twice to the same place), or most+1 when it is more than
// most. Within one edit it compares the strings once; beyond, it fills the table row by
// row, stops as soon as a row passes most, and allocates nothing (a b of 64 bytes or
// more then counts as too far).
func editDistance(a, b string, most int) int {
	switch {
	case a == b:
		return 0
	case len(a)-len(b) > most || len(b)-len(a) > most:
		return most + 1
	case most == 1:
		if oneEdit(a, b) {
			return 1
		}
		return 2
	case len(b) >= 64:
		return most + 1
	}
	var rows [3][64]int // the rows for a[:i-2], a[:i-1] and a[:i]
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= len(b); j++ {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		low := i
		for j := 1; j <= len(b); j++ {
			sub := 1
			if a[i-1] == b[j-1] {
				sub = 0
			}
			d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+sub)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			cur[j] = d
			low = min(low, d)
		}
		if low > most {
			return most + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], most+1)
}

// oneEdit reports whether a and b, which differ and whose lengths differ by at most
// one, are one insertion, deletion, substitution or swap of adjacent bytes apart.
func oneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if len(a) < len(b) {
		return a[i:] == b[i+1:] // b has one byte more, at i
	}
	return a[i+1:] == b[i+1:] || // a substitution at i
		i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:] // a swap
}
