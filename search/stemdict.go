package search

import (
	_ "embed"
	"strings"
)

// A process's first index build used to stem every distinct word of its catalog, most
// of them through the Snowball stemmer at about a microsecond each: a tenth of the
// build. Most of those words are common English, so the stems of the most frequent
// English words are computed ahead, by normalize itself, and embedded: a first build
// stems only its catalog's rarer words. TestStemDict holds every line to normalize, and
// writes both files again (see there).
//
// stemdict.txt has a line for each of the 30,000 most frequent lowercase words of the
// GloVe 6B vocabulary (public domain; see SOURCE.md): the word alone if it is its own
// stem, else the word, a tab and its stem, which is empty for a stop word. The lines are
// sorted. stemdict.idx indexes them like package gloss's index: a uint32 count of
// slots, a power of two, then the slots of an open-addressing hash table keyed by the
// word's hashToken (linear probing from its low bits), each the offset of a line plus
// one in its low 20 bits and the top 12 bits of the hash above them, or 0 for none.
var (
	//go:embed stemdict.txt
	stemDict string
	//go:embed stemdict.idx
	stemDictIdx string
)

// A stemdict.idx slot holds an offset in its low dictOffsetBits bits and the top
// dictMarkBits bits of its word's hash above them.
const (
	dictOffsetBits = 20
	dictMarkBits   = 32 - dictOffsetBits
)

// dictUint32 reads the little-endian uint32 at offset i of stemdict.idx.
func dictUint32(i uint64) uint32 {
	_ = stemDictIdx[i+3] // one bounds check for the four bytes
	return uint32(stemDictIdx[i]) | uint32(stemDictIdx[i+1])<<8 | uint32(stemDictIdx[i+2])<<16 | uint32(stemDictIdx[i+3])<<24
}

// dictMask is the number of slots of stemdict.idx less one.
var dictMask = uint64(dictUint32(0)) - 1

// builtinStem returns stemOfText(normalize(lowercase tok)) if tok, whose lowercase form
// has hashToken h, is a word of stemdict.txt. tok may be in any case.
func builtinStem[T string | []byte](h uint64, tok T) (stem, bool) {
	for j := h & dictMask; ; j = (j + 1) & dictMask {
		v := dictUint32(4 + 4*j)
		if v == 0 {
			return stem{}, false
		}
		if v>>dictOffsetBits != uint32(h>>(64-dictMarkBits)) {
			continue // another word's slot
		}
		line := stemDict[v&(1<<dictOffsetBits-1)-1:]
		if !hasLowerPrefix(line, tok) {
			continue
		}
		switch line[len(tok)] {
		case '\n':
			return stem{line[:len(tok)], h}, true // the word is its own stem
		case '\t':
			s := line[len(tok)+1:]
			s = s[:strings.IndexByte(s, '\n')]
			if s == "" {
				return stem{}, true // a stop word; stemOfText("") is stem{} too
			}
			return stem{s, hashIn(s, 0, len(s))}, true
		}
	}
}

// hasLowerPrefix reports whether line starts with tok lowercased, where line's words
// are lowercase ASCII letters.
func hasLowerPrefix[T string | []byte](line string, tok T) bool {
	if len(line) <= len(tok) {
		return false
	}
	for i := range len(tok) {
		if lowerByte[tok[i]] != line[i] {
			return false
		}
	}
	return true
}
