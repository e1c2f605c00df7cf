// Package search finds tools in a catalog: BM25F ranking over a tool's name, title,
// description, parameter names, descriptions and enum values, server name and, once an
// index is given the search log's evidence, the queries that led to its calls, with
// exact-name matching, substring and misspelling fallbacks, and regular-expression search
// over the same fields.
//
// An Index is built once per catalog snapshot (see Cache) and is then read-only, so any
// number of goroutines may search it at once. It is written by hand for speed: a search
// at 10,000 tools takes tens of microseconds.
package search

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
)

// The fields of a tool that BM25F scores, each with its own weight and length
// normalization.
const (
	fieldName      = iota // the tool's own name
	fieldTitle            // its human title
	fieldDesc             // its description
	fieldParamName        // input schema property names
	fieldParamDesc        // input schema property descriptions and enum values
	fieldServer           // the server's name
	numFields
)

// Params tunes ranking. The zero value is not useful; start from DefaultParams.
type Params struct {
	// K1 is the term-frequency saturation of BM25.
	K1 float64
	// Weight and B are each field's weight and length normalization (0 none, 1 full).
	Weight [numFields]float64
	B      [numFields]float64
	// Coord multiplies a score by (matched/queried)^Coord, the share of the query's
	// terms the tool matches, so tools that answer more of a request rank higher. 0
	// (or less) turns it off.
	Coord float64
	// Synonyms is the weight, relative to the word itself, of the thesaurus terms added
	// for a query word that no tool uses (0 turns the thesaurus off).
	Synonyms float64
	// Prefix is the weight of abbreviations of a query term that tools use ("calc" for
	// "calculate", "info" for "information").
	Prefix float64
	// PathWords is the weight of the terms a file path in the query implies ("file").
	PathWords float64
	// PathVerbs is the weight of the file operation the query's verbs ask for when it
	// names a local file path: "save the report to /tmp/a.md" implies "write", "open
	// /etc/hosts" implies "read" (see pathVerbs). 1 counts it as if the query said it.
	PathVerbs float64
	// Questions is the weight of the answer kinds that question words imply ("when"
	// asks for a date).
	Questions float64
	// Grams is the weight of character 4-grams: BM25F's first GramsTop results are
	// reordered by score × (1 + Grams × the share of the query's 4-grams that the tool's
	// name, title and description have), see grams.go. 0 (or less) turns it off, and
	// the index then keeps no 4-grams.
	Grams float64
	// GramsTop is how many of BM25F's first results the 4-grams reorder.
	GramsTop int

	// Learned is the weight of the learned field: the queries that led to successful
	// calls of a tool (see Index.WithEvidence). 0 (or less) turns the field off. A
	// query describes the user's task, its data and names as well as the tool, so its
	// words count half what the description's do: at 1 the field began to pull tools
	// that earlier, similar requests had called above the right one (bench/README.md).
	Learned float64
	// LearnedB is the learned field's length normalization (0 none, 1 full), applied
	// to each query against the average query: a long request says less about the tool
	// with each of its words. How many queries led to a tool is not normalized away:
	// more of them are more evidence.
	LearnedB float64
	// LearnedPerTool is the most distinct queries a tool's learned field keeps, the
	// weightiest (see LearnedHalfLife); 0 means no bound.
	LearnedPerTool int
	// LearnedHalfLife is the age of its last use at which a query counts half: a
	// query's weight in the field is (1 + ln count) × 2^(-age/LearnedHalfLife). 0 turns
	// decay off.
	LearnedHalfLife time.Duration
}

// DefaultParams are the settings toolshed ships with. They were chosen on the two
// benchmark sets in bench/ among settings that help on both, and each feature beyond
// plain BM25F was kept only if it helped without hurting either set; see bench/README.md.
var DefaultParams = Params{
	K1:        1.2,
	Weight:    [numFields]float64{fieldName: 3, fieldTitle: 2, fieldDesc: 1, fieldParamName: 0.8, fieldParamDesc: 0.35, fieldServer: 1},
	B:         [numFields]float64{fieldName: 0.3, fieldTitle: 0.3, fieldDesc: 0.75, fieldParamName: 0.5, fieldParamDesc: 0.75, fieldServer: 0},
	Coord:     0.3,
	Synonyms:  0.4,
	Prefix:    0.2,
	PathWords: 0.3,
	PathVerbs: 1,
	Questions: 0.3,
	GramsTop:  50,

	Learned:         0.5,
	LearnedB:        0.75,
	LearnedPerTool:  32,
	LearnedHalfLife: 30 * 24 * time.Hour,
}

// Index is a search index over one catalog snapshot. It is immutable and safe for
// concurrent use.
type Index struct {
	snap   *catalog.Snapshot
	params Params

	terms     *termTable  // hashToken of an index term -> term id
	surfaces  *termTable  // hashToken of a lowercased token of the catalog -> term id, -1 for a stop word
	coords    [][]float32 // coords[nq] are the coordination factors of queries of nq terms
	termText  []string    // term id -> index term
	idf       []float32
	postStart []int32 // postings of term t are postDoc[postStart[t]:postStart[t+1]]
	postDoc   []int32
	postScore []float32 // BM25F weight of the term in the doc, before idf
	maxScore  []float32 // per term, the largest of its postScore values

	exact exactNames // normalized bare and qualified names -> docs

	// grams are each tool's distinct character 4-grams, in text order, when Params.Grams is
	// above 0 (see grams.go); nil otherwise.
	grams [][]uint32

	// namesOnce makes, on the first substring fallback, names: every tool's normalized
	// qualified name; and for each of the 128 bits of gramBit, the set of tools whose
	// name has a pair of adjacent bytes with that bit: gramTools[b*k:(b+1)*k] for
	// k = (tools+63)/64, a bit a tool. The fallback is rare, so builds do not pay for it.
	namesOnce sync.Once
	names     []string
	gramTools []uint64

	// firstOnce makes, on the first fuzzy fallback, byFirst: the ids of the terms of
	// fuzzyMinLen bytes or more, by their first byte.
	firstOnce sync.Once
	byFirst   *[256][]int32

	// regexOnce folds, on the first regex search, the tools' text for the regex path;
	// that search also starts building the text's trigram index (see regexText).
	regexOnce sync.Once
	regexText *regexText
}

// Snapshot returns the catalog the index was built from.
func (ix *Index) Snapshot() *catalog.Snapshot { return ix.snap }

// termID returns the id of an index term, if the index has it.
func (ix *Index) termID(t stem) (int32, bool) {
	id, ok := ix.terms.lookup(t.hash)
	// Terms are told apart by hash alone, as in the build; the comparison only keeps
	// a query word whose hash collides with another term from taking its place.
	if !ok || ix.termText[id] != t.text {
		return 0, false
	}
	return id, true
}

// qualifiedNames returns every tool's normalized qualified name and the tools by gram
// bit (see the gramTools field).
func (ix *Index) qualifiedNames() (names []string, gramTools []uint64) {
	ix.namesOnce.Do(func() {
		n := ix.snap.Len()
		k := (n + 63) / 64
		ix.names = make([]string, n)
		ix.gramTools = make([]uint64, gramBitCount*k)
		for d, t := range ix.snap.Tools() {
			name := normalizeName(t.Qualified)
			ix.names[d] = name
			for i := 0; i+1 < len(name); i++ {
				ix.gramTools[gramBit(name[i], name[i+1])*k+d/64] |= 1 << (d % 64)
			}
		}
	})
	return ix.names, ix.gramTools
}

// gramBitCount is how many bits gramBit spreads the pairs of bytes over.
const gramBitCount = 128

// gramBit hashes a pair of adjacent bytes to one of gramBitCount bits. A name that
// contains a word has every pair of the word, so it is in the set of each of the word's
// bits: intersecting those sets rules out all but a few names before any is searched.
func gramBit(a, b byte) int {
	return int((uint32(a)<<8 | uint32(b)) * 0x9E3779B1 >> 25) // 0..127
}

// NewIndex builds an index over snap with DefaultParams.
func NewIndex(snap *catalog.Snapshot) *Index { return NewIndexParams(snap, DefaultParams) }

// normalizeName folds a name for exact matching: lowercase, and every run of characters
// other than letters and digits becomes one '_', so "Create Issue", "create-issue" and
// "create_issue" are the same name.
func normalizeName(s string) string {
	if n, ok := normalizeASCIIName(s); ok {
		return n
	}
	return normalizeAnyName(s)
}

// normalizeAnyName is normalizeName for any text: the definition, which
// normalizeASCIIName follows for ASCII names.
func normalizeAnyName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	sep := false
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		if isWordRune(r) {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			sep = false
			b.WriteRune(r)
		} else {
			sep = true
		}
	}
	return b.String()
}

// normalizeASCIIName is normalizeName for ASCII names, the common case, without
// allocating more than the result.
func normalizeASCIIName(s string) (string, bool) {
	var buf [catalog.MaxNameLen]byte
	n, ok := foldASCIIName(&buf, s)
	return string(buf[:n]), ok
}

// nameHash is hashToken of normalizeName(s), without allocating for ASCII names.
func nameHash(s string) uint64 {
	var buf [catalog.MaxNameLen]byte
	if n, ok := foldASCIIName(&buf, s); ok {
		return hashToken(buf[:n])
	}
	return hashToken([]byte(normalizeName(s)))
}

// foldASCIIName writes normalizeName(s) into buf and returns its length, if s is ASCII
// and no longer than buf; the result is never longer than s. A build folds every
// tool's name and qualified name, so the loop is a table lookup and a store a byte.
func foldASCIIName(buf *[catalog.MaxNameLen]byte, s string) (int, bool) {
	if len(s) > len(buf) {
		return 0, false
	}
	n, sep := 0, false
	for i := 0; i < len(s); i++ {
		c := nameFold[s[i]]
		switch c {
		case 0:
			sep = n > 0
			continue
		case 0xff:
			return 0, false
		}
		if sep {
			buf[n] = '_'
			n++
			sep = false
		}
		buf[n] = c
		n++
	}
	return n, true
}

// nameFold maps an ASCII letter to its lowercase form, a digit to itself, another ASCII
// byte (a separator) to 0, and a byte of a non-ASCII character to 0xff.
var nameFold = func() (t [256]byte) {
	for c := range 256 {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = 0xff
		case asciiClass[c] != 0:
			t[c] = byte(c) | 0x20 // lowercases a letter; a digit stays
		}
	}
	return t
}()
