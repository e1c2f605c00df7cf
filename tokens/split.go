package tokens

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file splits text into pieces exactly as o200k_base's pre-tokenizer regexp does,
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// but in one forward pass over the runes: the library runs it in a backtracking engine,
// which was most of the CPU toolshed spent to count a large catalog. Each alternative is
// a function that returns where its leftmost-first match from i ends, or -1; the
// backtracking each does is worked out by hand in its comment. FuzzSplit checks the
// pieces against the library's.

func isUpper(r rune) bool { // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

func isLower(r rune) bool { // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

// del is U+007F, which the library's compiled regexp leaves out of both negated classes
// below (its ASCII bitmaps stop at U+007E), so no alternative matches it and the library
// skips it: it counts as no token. toolshed keeps that, so every count stays the same.
const del = 0x7f

// isPrefix is [^\r\n\p{L}\p{N}], the optional character before a word.
func isPrefix(r rune) bool { return r != '\r' && r != '\n' && r != del && !isLetter(r) && !isNumber(r) }

// isSymbol is [^\s\p{L}\p{N}].
func isSymbol(r rune) bool { return r != del && !unicode.IsSpace(r) && !isLetter(r) && !isNumber(r) }

func at(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// run returns the end of the longest run of runes from i that are in class.
func run(s string, i int, class func(rune) bool) int {
	for {
		r, n := at(s, i)
		if n == 0 || !class(r) {
			return i
		}
		i += n
	}
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or i.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	if strings.HasPrefix(s[i+1:], "ſ") { // the library's compiled regexp folds U+017F to s
		return i + 1 + len("ſ")
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return i + 3
		}
	}
	return i
}

// word1 is upper*lower+contraction? from i: the greedy upper run gives back runes until
// the next one starts a lower run (runes in both classes can), and the lower run is
// then the longest.
func word1(s string, i int) int {
	var starts []int // where each rune of the upper run starts, for the giving back
	var buf [16]int
	starts = buf[:0]
	j := i
	for {
		r, n := at(s, j)
		if n == 0 || !isUpper(r) {
			break
		}
		starts = append(starts, j)
		j += n
	}
	for k := len(starts); k >= 0; k-- {
		p := j
		if k < len(starts) {
			p = starts[k]
		}
		if r, n := at(s, p); n > 0 && isLower(r) {
			return contraction(s, run(s, p+n, isLower))
		}
	}
	return -1
}

// word2 is upper+lower*contraction? from i.
func word2(s string, i int) int {
	j := run(s, i, isUpper)
	if j == i {
		return -1
	}
	return contraction(s, run(s, j, isLower))
}

// withPrefix tries word with the optional prefix rune taken, then without it.
func withPrefix(s string, i int, word func(string, int) int) int {
	if r, n := at(s, i); n > 0 && isPrefix(r) {
		if e := word(s, i+n); e >= 0 {
			return e
		}
	}
	return word(s, i)
}

// nextPiece returns the end of the piece that starts at i < len(s), and skip when the
// rune at i is one no alternative matches (DEL), which is no piece.
func nextPiece(s string, i int) (end int, skip bool) {
	if e := withPrefix(s, i, word1); e >= 0 {
		return e, false
	}
	if e := withPrefix(s, i, word2); e >= 0 {
		return e, false
	}
	r, n := at(s, i)
	if isNumber(r) { // \p{N}{1,3}
		j := i + n
		for k := 1; k < 3; k++ {
			r, m := at(s, j)
			if m == 0 || !isNumber(r) {
				break
			}
			j += m
		}
		return j, false
	}
	// " ?[^\s\p{L}\p{N}]+[\r\n/]*"
	j := i
	if r == ' ' {
		j++
	}
	if q, m := at(s, j); m > 0 && isSymbol(q) {
		return run(s, run(s, j+m, isSymbol), func(r rune) bool { return r == '\r' || r == '\n' || r == '/' }), false
	}
	if !unicode.IsSpace(r) {
		return i + n, true
	}
	stop := run(s, i, unicode.IsSpace)
	// \s*[\r\n]+: the greedy whitespace run cannot be followed by a line break, so the
	// engine backtracks, and the library's compiled regexp backtracks to the run's first
	// line break (where the regexp itself would give back only to its last): the piece
	// ends after the line breaks from there.
	for k := i; k < stop; k++ {
		if s[k] == '\r' || s[k] == '\n' {
			return run(s, k, func(r rune) bool { return r == '\r' || r == '\n' }), false
		}
	}
	// \s+(?!\S): the whole run at the end of the text, else all but its last rune.
	if stop == len(s) {
		return stop, false
	}
	_, last := utf8.DecodeLastRuneInString(s[:stop])
	if stop-last > i {
		return stop - last, false
	}
	return stop, false // \s+
}
