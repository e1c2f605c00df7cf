// Package gloss gives the English glosses of Chinese words, so that a tool described in
// Chinese can be found by a request written in English, and the other way round.
//
// Many MCP servers describe their tools in Chinese only ("获取天气预报"), and a search
// index that splits that text into characters can match it only to Chinese queries. The
// table here, drawn from the CC-CEDICT dictionary, maps about 32,000 Chinese words (the
// most frequent 20,000 of jieba's dictionary and single characters, in simplified and
// traditional forms, less function words) to the English words of their first sense:
// 获取 to "gain get acquire", 天气 to "weather", 预报 to "forecast". Append segments a
// text into the longest words the table knows and appends their glosses, which the
// index then treats as more words of the text.
//
// The table is embedded (glosses.txt, CC BY-SA 4.0, see SOURCE.md) with a hash index
// made when it was generated (glosses.idx), so it costs no work to load: a word is a
// hash and a probe or two.
package gloss

import (
	_ "embed"
	"math/bits"
	"slices"
	"strings"
)

// table is lines of a headword, a tab and its gloss, sorted by headword; idx is its
// index, as gen.go describes: the number of hash slots, the slots, the lengths of the
// headwords starting with each character, and a filter of the first two characters of
// the longer headwords.
var (
	//go:embed glosses.txt
	table string
	//go:embed glosses.idx
	idx string
)

// The headwords are CJK Unified Ideographs, U+4E00 to U+9FFF; first and last bound them.
const (
	first = 0x4e00
	last  = 0x9fff
	// maxWord is the longest headword in bytes: four characters of three bytes.
	maxWord = 12
	// leadMin and leadMax bound the first bytes of their UTF-8 encodings.
	leadMin, leadMax = 0xe4, 0xe9
	// A slot holds the offset of a line plus one in its low offsetBits bits, and the
	// top bits of the headword's hash above them, so that a probe of a slot that holds
	// another word seldom needs to read the table.
	offsetBits = 20
	// pairBits is the number of bits of the filter of first characters.
	pairBits = 1 << 16
)

var (
	// slots is the number of hash slots.
	slots = u32(0)
	// lengthsAt and pairsAt are where the character lengths and the filter start in idx.
	lengthsAt = 4 + 4*slots
	pairsAt   = lengthsAt + last - first + 1
)

// u32 reads the little-endian uint32 at offset i of idx.
func u32(i uint32) uint32 {
	_ = idx[i+3] // one bounds check for the four bytes
	return uint32(idx[i]) | uint32(idx[i+1])<<8 | uint32(idx[i+2])<<16 | uint32(idx[i+3])<<24
}

// lengths returns the lengths of the headwords that start with c: bit k-1 is set if one
// has k characters.
func lengths(c rune) byte { return idx[lengthsAt+uint32(c-first)] }

// mayGoOn reports whether a headword of three or more characters may start with the two
// characters whose hash is h. It says yes for about one pair in thirty that no
// headword starts with, and never says no for one that does: a filter that spares
// Append most probes for long words, which few texts hold.
func mayGoOn(h uint32) bool {
	p := h & (pairBits - 1)
	return idx[pairsAt+p/8]&(1<<(p%8)) != 0
}

// hashStep adds character c to hash h, which starts at hashStart. It is FNV-1a over
// characters rather than bytes, so that the hashes of a word's prefixes come one
// character at a time; gen.go hashes headwords the same way.
func hashStep(h uint32, c rune) uint32 { return (h ^ uint32(c)) * 16777619 }

const hashStart = 2166136261

// lookup returns where the line of a headword starts, given its hash.
func lookup(word string, h uint32) (uint32, bool) {
	mask := slots - 1
	for j := h & mask; ; j = (j + 1) & mask {
		v := u32(4 + 4*j)
		if v == 0 {
			return 0, false
		}
		if (v^h)>>offsetBits != 0 {
			continue // another word's slot
		}
		// The line at at-1 is the word's if it starts with the word and a tab.
		at := v & (1<<offsetBits - 1)
		l := table[at-1:]
		if len(l) > len(word) && l[len(word)] == '\t' && l[:len(word)] == word {
			return at - 1, true
		}
	}
}

// appendGloss appends the gloss of the line at offset at, whose headword is n bytes,
// and a space.
func appendGloss(dst []byte, at uint32, n int) []byte {
	l := table[int(at)+n+1:]
	dst = append(dst, l[:strings.IndexByte(l, '\n')]...)
	return append(dst, ' ')
}

// CharAt decodes the character at text[i] if it is a CJK Unified Ideograph (U+4E00 to
// U+9FFF), the table's range, which UTF-8 encodes in three bytes; else it returns -1.
func CharAt(text string, i int) rune {
	if i+2 >= len(text) {
		return -1
	}
	b0, b1, b2 := text[i], text[i+1], text[i+2]
	if !MayStart(b0) || b1&0xc0 != 0x80 || b2&0xc0 != 0x80 {
		return -1
	}
	c := rune(b0&0x0f)<<12 | rune(b1&0x3f)<<6 | rune(b2&0x3f)
	if c < first {
		return -1 // U+4000 to U+4DFF share the lead byte of U+4E00
	}
	return c
}

// MayStart reports whether b may be the first byte of a character of a word the table
// knows, so that a caller scanning text anyway can tell when Append has work to do.
func MayStart(b byte) bool { return b >= leadMin && b <= leadMax }

// Append appends to dst the glosses of the Chinese words of text, each followed by a
// space, and returns the extended buffer. It reads text from left to right, taking at
// each Chinese character the longest word of the table that starts there (up to four
// characters), and glosses each word once (it remembers the first 64 distinct words, so
// a longer text may gloss a later repeat again); characters the table lacks, and all
// other text, add nothing.
func Append(dst []byte, text string) []byte {
	var hashes [5]uint32 // hashes[k]: of the k characters from i
	// The words glossed so far, by line, each glossed once: a word said again adds
	// nothing to what a text is about, and the index reads less. A fixed capacity keeps
	// it on the stack and the linear search short.
	seen := make([]uint32, 0, 64)
	for i := 0; i < len(text); {
		if !MayStart(text[i]) {
			i++ // most text: ASCII, or a byte of a character outside the range
			continue
		}
		c := CharAt(text, i)
		if c < 0 {
			i++
			continue
		}
		lens := lengths(c)
		if lens == 0 {
			i += 3 // no word starts with c
			continue
		}
		most := bits.Len8(lens)
		// The candidates: the next one to most characters, all in the table's range,
		// since a headword is made of nothing else.
		k, h := 1, hashStep(hashStart, c)
		hashes[1] = h
		for k < most {
			if k == 2 && !mayGoOn(h) {
				break
			}
			d := CharAt(text, i+3*k)
			if d < 0 {
				break
			}
			h = hashStep(h, d)
			k++
			hashes[k] = h
		}
		n := 1 // characters to move past
		for ; k > 0; k-- {
			if lens&(1<<(k-1)) == 0 {
				continue // no word of k characters starts with c
			}
			if at, ok := lookup(text[i:i+3*k], hashes[k]); ok {
				if !slices.Contains(seen, at) {
					dst = appendGloss(dst, at, 3*k)
					if len(seen) < cap(seen) {
						seen = append(seen, at)
					}
				}
				n = k
				break
			}
		}
		i += 3 * n
	}
	return dst
}
