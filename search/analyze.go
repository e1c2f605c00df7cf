package search

import (
	"encoding/binary"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
)

// The analyzer turns text into search terms. Tool text is half code, half prose, so it
// splits identifiers the way programmers write them and normalizes words the way search
// engines do:
//
//   - words are runs of letters and digits; everything else separates, so snake_case,
//     kebab-case, dotted.names and path/like/names split into their parts;
//   - camelCase and PascalCase split at case changes (getHTTPResponse → get, http,
//     response), and letters split from digits (ipv4 → ipv, 4);
//   - a word that was split is also kept whole (GitHub → git, hub, github), so a query
//     that writes it as one word still matches;
//   - Han, Hiragana and Katakana characters, written without spaces, are one term each;
//   - terms are lowercased, English stop words dropped, and English words stemmed with
//     the Snowball project's English (Porter2) stemmer, so "creates", "creating" and
//     "created" meet. It is the Snowball compiler's own Go output (blevesearch/snowballstem),
//     which works on bytes and stems a word in about a microsecond, 2.4 times faster
//     than a hand port that converts every word to runes (kljensen/snowball), with the
//     same stems; words that no rule of the algorithm can change skip it (porter2Keeps),
//     and so do plurals of such words, which lose their s (porter2Plural).

// Character classes of ASCII bytes, for the tokenizer's hot loop.
const (
	clsLower = 1 << iota
	clsUpper
	clsDigit
	clsAlnum = clsLower | clsUpper | clsDigit
)

var asciiClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = clsLower
		t[c-'a'+'A'] = clsUpper
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = clsDigit
	}
	return t
}()

// byteClass extends asciiClass with clsHigh for bytes of non-ASCII characters; 0 is an
// ASCII separator.
const clsHigh = 8

var byteClass = func() (t [256]uint8) {
	t = asciiClass
	for c := utf8.RuneSelf; c < 256; c++ {
		t[c] = clsHigh
	}
	return t
}()

// lowerByte lowercases ASCII letters.
var lowerByte = func() (t [256]byte) {
	for c := range t {
		t[c] = byte(c)
		if asciiClass[c] == clsUpper {
			t[c] += 'a' - 'A'
		}
	}
	return t
}()

// splits[a][b] reports a word boundary between a byte of class a and one of class b:
// between letters and digits, and from lower to upper case (camel|Case). The third rule,
// HTTP|Server, needs the byte after and is checked apart.
// It is indexed by a<<3|b.
var splits = func() (t [64]bool) {
	for _, a := range []uint8{clsLower, clsUpper, clsDigit} {
		for _, b := range []uint8{clsLower, clsUpper, clsDigit} {
			t[a<<3|b] = (a == clsDigit) != (b == clsDigit) || a == clsLower && b == clsUpper
		}
	}
	return t
}()

// Tokens are identified during a build by a 64-bit hash of their lowercased text.
// hashToken is the definition; hashIn computes the same value straight from an
// ASCII word in any case, eight bytes at a time: OR-ing 0x20 into each byte lowercases
// letters and leaves digits as they are.
const (
	hashK0 = 0x9e3779b97f4a7c15
	hashK1 = 0xbf58476d1ce4e5b9
	lower8 = 0x2020202020202020
)

func hashMix(x uint64) uint64 {
	x ^= x >> 31
	x *= hashK1
	return x ^ x>>29
}

// hashToken hashes a lowercased token.
func hashToken(b []byte) uint64 {
	h := uint64(len(b)) * hashK0
	for len(b) >= 8 {
		h = hashMix(h ^ binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	if len(b) > 0 {
		var x uint64
		for i, c := range b {
			x |= uint64(c) << (8 * i)
		}
		h = hashMix(h ^ x)
	}
	return hashMix(h)
}

// hashIn is hashToken of s[i:j] lowercased, for s[i:j] made of ASCII letters and
// digits. It reads whole 8-byte words of s, even around the word, and masks or shifts
// away the bytes outside it, so a word's last partial chunk costs one load instead of a
// loop over its bytes.
func hashIn(s string, i, j int) uint64 {
	h := uint64(j-i) * hashK0
	for ; j-i >= 8; i += 8 {
		h = hashMix(h ^ (binary.LittleEndian.Uint64([]byte(s[i:i+8])) | lower8))
	}
	r := uint(j - i)
	if r == 0 {
		return hashMix(h)
	}
	var x uint64
	switch {
	case i+8 <= len(s):
		x = (binary.LittleEndian.Uint64([]byte(s[i:i+8])) | lower8) & (1<<(8*r) - 1)
	case j >= 8:
		x = (binary.LittleEndian.Uint64([]byte(s[j-8:j])) | lower8) >> (64 - 8*r)
	default:
		for k := uint(0); k < r; k++ {
			x |= uint64(s[i+int(k)]|0x20) << (8 * k)
		}
	}
	return hashMix(hashMix(h ^ x))
}

// tokenize calls emit with each token of s, lowercased, and its FNV-1a hash, in order.
// The slice passed to emit is only valid during the call.
func tokenize(s string, buf []byte, emit func(tok []byte, hash uint64)) []byte {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiClass[c] == 0 {
				i++
				continue
			}
			j, goesOn := asciiWord(s, i)
			if goesOn {
				// The word continues with non-ASCII letters (café, naïve): treat it whole.
				buf = buf[:0]
				i = unicodeWord(s, i, &buf)
				emit(buf, hashToken(buf))
				continue
			}
			buf = splitASCII(s[i:j], buf, emit)
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case isIdeograph(r):
			buf = utf8.AppendRune(buf[:0], r) // these scripts have no case
			emit(buf, hashToken(buf))
			i += size
		case isWordRune(r):
			buf = buf[:0]
			i = unicodeWord(s, i, &buf)
			emit(buf, hashToken(buf))
		default:
			i += size
		}
	}
	return buf
}

// asciiWord returns where the run of ASCII letters and digits that starts at s[i] ends,
// and whether the word goes on there in non-ASCII letters (café, naïve), which makes it
// one word of any script. Ideographs, a word each, do not continue it.
func asciiWord(s string, i int) (end int, goesOn bool) {
	j := i + 1
	for j < len(s) && asciiClass[s[j]] != 0 {
		j++
	}
	if j < len(s) && s[j] >= utf8.RuneSelf {
		r, _ := utf8.DecodeRuneInString(s[j:])
		return j, !isIdeograph(r) && isWordRune(r)
	}
	return j, false
}

// unicodeWord lowercases the word of letters and digits starting at s[i] into buf and
// returns the index after it. Ideographs end the word.
func unicodeWord(s string, i int, buf *[]byte) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if isIdeograph(r) || !isWordRune(r) {
			break
		}
		*buf = utf8.AppendRune(*buf, unicode.ToLower(r))
		i += size
	}
	return i
}

// splitASCII emits the parts of an ASCII alphanumeric word w, split at camelCase and
// letter/digit boundaries, then w whole when it had more than one part.
func splitASCII(w string, buf []byte, emit func([]byte, uint64)) []byte {
	start, parts := 0, 0
	for k := 1; k <= len(w); k++ {
		if k < len(w) && !splitsAt(w, k) {
			continue
		}
		buf = appendLower(buf[:0], w[start:k])
		emit(buf, hashToken(buf))
		start = k
		parts++
	}
	if parts > 1 {
		buf = appendLower(buf[:0], w)
		emit(buf, hashToken(buf))
	}
	return buf
}

// splitsAt reports whether the ASCII alphanumeric word w splits before w[k].
func splitsAt(w string, k int) bool {
	a, b := asciiClass[w[k-1]], asciiClass[w[k]]
	return splits[a<<3|b] || a == clsUpper && b == clsUpper && k+1 < len(w) && asciiClass[w[k+1]] == clsLower
}

func isASCIIAlnum(c byte) bool { return asciiClass[c] != 0 }
func isLower(c byte) bool      { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool      { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// isIdeograph reports scripts written without spaces between words, where each
// character is indexed as a term of its own.
func isIdeograph(r rune) bool {
	switch {
	case r < 0x2e80: // where the first of the three scripts starts
		return false
	case r >= 0x4e00 && r <= 0x9fff: // CJK Unified Ideographs, most of any such text
		return true
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
}

// queryStems remembers normalize's answers for query words that no index build has
// seen (see stems.go for the words of catalogs). Past stemCacheMax words it stops growing.
var queryStems struct {
	sync.RWMutex
	m map[string]stem
}

// stemCacheMax bounds each of the process-wide stem caches.
const stemCacheMax = 1 << 18

// stemOf is normalize through the stem caches and stemdict.txt, for a lowercased token
// in a buffer and its hashToken.
func stemOf(tok []byte, h uint64) stem {
	if t, ok := cachedStem(h); ok {
		return t
	}
	if t, ok := builtinStem(h, tok); ok {
		return t
	}
	queryStems.RLock()
	t, ok := queryStems.m[string(tok)]
	queryStems.RUnlock()
	if ok {
		return t
	}
	key := string(tok)
	t = stemOfText(normalize(key))
	queryStems.Lock()
	if queryStems.m == nil {
		queryStems.m = map[string]stem{}
	}
	if len(queryStems.m) < stemCacheMax {
		queryStems.m[key] = t
	}
	queryStems.Unlock()
	return t
}

// resetCaches empties both stem caches, so that benchmarks can measure a build in a
// process that has never built an index.
func resetCaches() {
	queryStems.Lock()
	queryStems.m = nil
	queryStems.Unlock()
	publishMu.Lock()
	published.Store(nil)
	publishMu.Unlock()
}

// normalize turns a lowercased token into its index term, or "" for a stop word.
func normalize(tok string) string {
	if stopWords[tok] {
		return ""
	}
	if len(tok) <= 3 || !isLowerASCIIWord(tok) || porter2Keeps(tok) {
		return tok
	}
	if x, ok := porter2Plural(tok); ok {
		return x
	}
	env := snowballstem.NewEnv(tok)
	english.Stem(env)
	stem := env.Current()
	// Porter2 turns a final y into i, so "multiply" stems to "multipli" but
	// "multiplication" to "multipl"; dropping the i joins such derivations
	// (summary/summarize, category/categorize, notify/notification).
	if len(stem) >= 5 && stem[len(stem)-1] == 'i' {
		stem = stem[:len(stem)-1]
	}
	return stem
}

// porter2Keeps reports whether the English (Porter2) stemmer returns w, a lowercase
// ASCII word of two letters or more, unchanged, without running it: each of its rules
// removes or replaces one of a fixed list of suffixes (or acts on a whole word of a
// fixed list), and w ends in none of them. Over a third of the words of tool catalogs
// end so ("github", "list", "token", "format"), and stemming costs about a microsecond
// a word, which a first build pays for every distinct word. TestPorter2Keeps holds this
// to the stemmer itself.
func porter2Keeps(w string) bool {
	prev := w[len(w)-2]
	switch w[len(w)-1] {
	case 'e', 'i', 's', 'y':
		return false // many suffixes end so, and step 5 removes a final e
	case 'c':
		return prev != 'i' // ic
	case 'd':
		return prev != 'e' // ed, eed, ied, and the exceptions succeed, proceed, exceed
	case 'g':
		return !strings.HasSuffix(w, "ing") // ing, and the exceptions dying, inning, ...
	case 'l':
		return prev != 'a' && prev != 'u' && prev != 'l' // al, ful, and step 5's ll
	case 'm':
		return !strings.HasSuffix(w, "ism") // ism, alism
	case 'n':
		return !strings.HasSuffix(w, "ion") // ion, ation, ization
	case 'r':
		return prev != 'e' && prev != 'o' // er, izer, ator
	case 't':
		return prev != 'n' // ant, ent, ment, ement
	}
	return true
}

// porter2Plural reports whether the English (Porter2) stemmer turns w, a lowercase ASCII
// word of four letters or more, into w without its final s, and returns that, without
// running it. That holds when w is x+"s" such that step 1a deletes the s (x does not end
// in s or u, and a vowel comes before x's last letter), w is not one of the stemmer's
// exceptions, and porter2Keeps(x): no later step changes x. An eighth of the words a
// catalog sends to the stemmer are such plurals ("tokens", "repos", "formats");
// TestPorter2Keeps holds this to the stemmer too.
func porter2Plural(w string) (string, bool) {
	n := len(w)
	if w[n-1] != 's' || w[n-2] == 'u' || !porter2Keeps(w[:n-1]) || !strings.ContainsAny(w[:n-2], "aeiou") {
		return "", false
	}
	switch w {
	case "atlas", "bias", "cosmos", "news":
		return "", false // the stemmer keeps these whole
	}
	return w[:n-1], true
}

func isLowerASCIIWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLower(s[i]) {
			return false
		}
	}
	return true
}

// stopWords are English function words, which say nothing about what a tool does, plus
// the filler of requests written to an assistant ("please", "could you"). Words that can
// carry a tool's meaning (up, down, on, off, all, not, before, after, open, close) are
// deliberately absent.
var stopWords = map[string]bool{}

func init() {
	for _, w := range []string{
		"a", "an", "the", "and", "or", "but", "nor", "so", "yet",
		"of", "at", "by", "for", "with", "about", "to", "from", "in", "into", "onto",
		"as", "than", "via", "per", "within", "without", "upon", "its", "it", "itself",
		"is", "am", "are", "was", "were", "be", "been", "being",
		"do", "does", "did", "doing", "done", "have", "has", "had", "having",
		"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves",
		"you", "your", "yours", "yourself", "yourselves",
		"he", "him", "his", "himself", "she", "her", "hers", "herself",
		"they", "them", "their", "theirs", "themselves",
		"this", "that", "these", "those", "there", "here",
		"what", "which", "who", "whom", "whose", "when", "where", "why", "how",
		"if", "then", "else", "because", "while", "until", "whether",
		"can", "could", "will", "would", "shall", "should", "may", "might", "must",
		"just", "very", "too", "also", "such", "some", "each", "every", "both",
		"e", "g", "eg", "ie", "etc",
		"please", "kindly", "want", "wants", "need", "needs", "like", "let", "lets",
	} {
		stopWords[w] = true
		maxStopWordLen = max(maxStopWordLen, len(w))
	}
}

// maxStopWordLen is the length of the longest stop word: longer words need no lookup.
var maxStopWordLen int

// appendLower appends s to buf with its ASCII letters lowercased.
func appendLower[T string | []byte](buf []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		buf = append(buf, lowerByte[s[i]])
	}
	return buf
}
