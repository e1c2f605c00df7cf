package search

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
)

// Regex search used to run a pattern's required literal through every tool's text, which
// at 10,000 tools took milliseconds a pattern: more than a whole BM25 search. So regex
// search keeps a trigram index of that text (the idea of Russ Cox's Code Search): for
// each three-byte sequence, the tools whose text has it. A pattern's literals then name
// their candidates through their rarest trigram, and only those are matched. Trigrams
// only narrow the candidates down; a candidate is still checked for the literals, field
// by field, and then matched by the pattern itself, so results are exactly those of
// trying every tool.
//
// Indexing the trigrams of 10,000 tools takes tens of milliseconds, more than the
// searches it speeds up until a few dozen have run, and an index may serve only one
// (a command-line search, a proxy request with a tools list of its own). So the second
// regex search over an index starts it in the background, and searches without it, as
// do the first and those that come before it is done.

// regexText is every tool's searchable text, case-folded for the literal checks (see
// foldASCII), with the trigram index over it once built.
type regexText struct {
	// text holds the tools one after another, each field by field in the order of
	// regexFields: field f of tool d is text[fieldAt[d*numRegexFields+f]:fieldAt[d*numRegexFields+f+1]].
	text    string
	fieldAt []int32

	searches atomic.Int32             // regex searches so far, up to the one that starts grams
	gramOnce sync.Once                // starts building grams
	grams    atomic.Pointer[trigrams] // nil until built
	built    chan struct{}            // closed once grams is set
}

// trigrams is the trigram index of a regexText.
type trigrams struct {
	// The tools whose text has a trigram of class g, ascending, are
	// tools[at[g]:at[g+1]], except for common trigrams.
	at    []int32
	tools []int32
	// common marks the trigrams found in so many tools that keeping their lists would
	// cost memory for no gain: a literal made only of them selects nothing.
	common []uint64
}

// Trigrams are keyed by the classes of their three bytes, 5 bits each (see gramClass),
// so that the index is a flat array.
const (
	gramBits  = 5
	numGrams  = 1 << (3 * gramBits)
	gramMask  = numGrams - 1
	minCommon = 32 // a trigram is common when more than max(tools/8, minCommon) have it
)

// gramClass maps a byte to its class: one per ASCII letter (either case), one for
// digits, whitespace, '_', other ASCII, UTF-8 continuation bytes and UTF-8 lead bytes.
// Several bytes sharing a class only widens a trigram's list, which the literal check
// narrows again.
var gramClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= 'a' && c <= 'z':
			t[c] = uint8(c-'a') + 1
		case c >= 'A' && c <= 'Z':
			t[c] = uint8(c-'A') + 1
		case c >= '0' && c <= '9':
			t[c] = 27
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			t[c] = 28
		case c == '_':
			t[c] = 29
		case c >= 0xc0:
			t[c] = 31
		case c >= 0x80:
			t[c] = 30
		}
	}
	return t
}()

const numRegexFields = len(regexFields)

// newRegexText folds the tools' text.
func newRegexText(tools []*catalog.Tool) *regexText {
	size := 0
	for _, t := range tools {
		size += len(t.Qualified) + len(t.Name) + len(t.SearchTitle()) + len(t.SearchDescription()) + len(t.Server) + 5
		for _, p := range t.Params {
			size += len(p.Name) + len(p.Description) + 2
			for _, v := range p.Enum {
				size += len(v) + 1
			}
		}
	}
	// The text is folded a piece at a time into scratch and copied into one string,
	// which is never held twice.
	var b strings.Builder
	b.Grow(size)
	var scratch []byte
	add := func(s string) {
		scratch = foldASCII(scratch[:0], s)
		b.Write(scratch)
	}
	fieldAt := make([]int32, 0, len(tools)*numRegexFields+1)
	for _, t := range tools {
		// In the order of regexFields: name, title, description, parameters, server.
		fieldAt = append(fieldAt, int32(b.Len()))
		add(t.Qualified)
		add(t.Name)
		fieldAt = append(fieldAt, int32(b.Len()))
		add(t.SearchTitle())
		fieldAt = append(fieldAt, int32(b.Len()))
		add(t.SearchDescription())
		fieldAt = append(fieldAt, int32(b.Len()))
		for _, p := range t.Params {
			add(p.Name)
			add(p.Description)
			for _, v := range p.Enum {
				add(v)
			}
		}
		fieldAt = append(fieldAt, int32(b.Len()))
		add(t.Server)
	}
	fieldAt = append(fieldAt, int32(b.Len()))
	return &regexText{text: b.String(), fieldAt: fieldAt}
}

// numTools is the number of tools the text holds.
func (rt *regexText) numTools() int { return (len(rt.fieldAt) - 1) / numRegexFields }

// trigrams returns the trigram index for a regex search, or nil when it is not built:
// the second search starts building it in the background, so that no search waits.
func (rt *regexText) trigrams() *trigrams {
	if g := rt.grams.Load(); g != nil {
		return g
	}
	if rt.searches.Load() < 2 && rt.searches.Add(1) < 2 {
		return nil
	}
	rt.startTrigrams()
	return nil
}

// startTrigrams starts building the trigram index, once.
func (rt *regexText) startTrigrams() {
	rt.gramOnce.Do(func() {
		rt.built = make(chan struct{})
		go func() {
			rt.grams.Store(rt.indexGrams())
			close(rt.built)
		}()
	})
}

// waitTrigrams builds the trigram index if it is not built, and waits for it.
func (rt *regexText) waitTrigrams() *trigrams {
	rt.startTrigrams()
	<-rt.built
	return rt.grams.Load()
}

// indexGrams fills the trigram lists. One pass over the text lists each tool's distinct
// trigrams, the next counts them, and the last writes the tools into the lists; none of
// the three branches on the data, which at a byte a step would mispredict half the time.
func (rt *regexText) indexGrams() *trigrams {
	n := rt.numTools()
	var met [numGrams / 64]uint64 // the trigrams of the current tool, small enough for L1
	grams := make([]uint16, 0, len(rt.text)*2/3)
	ends := make([]int32, n) // tool d's distinct trigrams end at grams[ends[d]]
	for d := range n {
		s := rt.text[rt.fieldAt[d*numRegexFields]:rt.fieldAt[(d+1)*numRegexFields]]
		if len(s) >= 3 {
			grams = slices.Grow(grams, len(s)-2)
			out := grams[len(grams) : len(grams)+len(s)-2]
			k := 0
			g := uint32(gramClass[s[0]])<<gramBits | uint32(gramClass[s[1]])
			for i := 2; i < len(s); i++ {
				g = (g<<gramBits | uint32(gramClass[s[i]])) & gramMask
				w, bit := &met[g/64], uint64(1)<<(g%64)
				out[k] = uint16(g)
				k += int((*w&bit)>>(g%64)) ^ 1 // 1 the first time
				*w |= bit
			}
			for _, g := range out[:k] {
				met[g/64] = 0
			}
			grams = grams[:len(grams)+k]
		}
		ends[d] = int32(len(grams))
	}
	count := make([]int32, numGrams)
	for _, g := range grams {
		count[g]++
	}
	// A common trigram's tools are written to one spare slot past the lists, which
	// is dropped, so the last pass writes without checking.
	tg := &trigrams{at: make([]int32, numGrams+1), common: make([]uint64, numGrams/64)}
	step := make([]uint8, numGrams) // 1 for a trigram with a list, 0 for a common one
	limit := int32(max(n/8, minCommon))
	for g, c := range count {
		if c > limit {
			tg.common[g/64] |= 1 << (g % 64)
			c = 0
		} else {
			step[g] = 1
		}
		tg.at[g+1] = tg.at[g] + c
	}
	total := tg.at[numGrams]
	tools := make([]int32, total+1)
	next := count // reused: where the next tool of each trigram goes
	for g := range next {
		next[g] = tg.at[g]
		if step[g] == 0 {
			next[g] = total
		}
	}
	from := int32(0)
	for d, end := range ends {
		for _, g := range grams[from:end] {
			tools[next[g]] = int32(d)
			next[g] += int32(step[g])
		}
		from = end
	}
	tg.tools = tools[:total:total]
	return tg
}

func (tg *trigrams) isCommon(g uint32) bool { return tg.common[g/64]&(1<<(g%64)) != 0 }

// field returns the folded text of field f of tool d.
func (rt *regexText) field(d int32, f int) string {
	i := int(d)*numRegexFields + f
	return rt.text[rt.fieldAt[i]:rt.fieldAt[i+1]]
}

// rarest returns the list of lit's rarest trigram: every tool whose text has lit is on
// it. ok is false when lit has no trigram with a list (it is shorter than three bytes,
// or all its trigrams are common).
func (tg *trigrams) rarest(lit string) (tools []int32, ok bool) {
	if len(lit) < 3 {
		return nil, false
	}
	g := uint32(gramClass[lit[0]])<<gramBits | uint32(gramClass[lit[1]])
	for i := 2; i < len(lit); i++ {
		g = (g<<gramBits | uint32(gramClass[lit[i]])) & gramMask
		if tg.isCommon(g) {
			continue
		}
		if list := tg.tools[tg.at[g]:tg.at[g+1]]; !ok || len(list) < len(tools) {
			tools, ok = list, true
		}
	}
	return tools, ok
}

// candidates returns, in catalog order, the tools of n that may match a pattern whose
// matches all contain, for each list of need, one of its strings; all is true when the
// trigrams cannot narrow the tools down, and every tool is a candidate.
//
// Any one list of need is enough to choose candidates by, so the one whose strings'
// rarest trigrams have the fewest tools in all is used. scratch is a bit set of n bits,
// all zero, for sortDocs to merge the lists of several strings.
func (tg *trigrams) candidates(need [][]string, n int, scratch []uint64) (tools []int32, all bool) {
	var best [][]int32
	bestCost := n / 2 // scanning is as cheap as merging lists that long
	for _, alts := range need {
		var lists [][]int32
		cost := 0
		for _, lit := range alts {
			list, ok := tg.rarest(lit)
			if !ok {
				cost = n
				break
			}
			lists = append(lists, list)
			cost += len(list)
		}
		if cost < bestCost {
			best, bestCost = lists, cost
		}
	}
	switch {
	case best == nil:
		return nil, true
	case len(best) == 1:
		return best[0], false
	}
	for _, list := range best {
		tools = append(tools, list...)
	}
	return sortDocs(tools, scratch), false
}

// mayMatch reports whether field f of tool d has, for each list of need, one of its
// strings: a pattern whose matches contain them can only match there if it does.
func (rt *regexText) mayMatch(d int32, f int, need [][]string) bool {
	text := rt.field(d, f)
	for _, alts := range need {
		found := false
		for _, lit := range alts {
			if strings.Contains(text, lit) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// foldASCII appends s and a newline to buf, with ASCII letters lowercased and the two
// non-ASCII letters that case-insensitive matching folds into ASCII (KELVIN SIGN to k,
// LONG S to s) replaced, so that a literal folded by appendFolded is found in the result
// wherever a case-insensitive pattern matches s.
func foldASCII(buf []byte, s string) []byte {
	n := len(buf)
	buf = append(buf, s...)
	out := buf[n:]
	if strings.IndexByte(s, 0xe2) < 0 && strings.IndexByte(s, 0xc5) < 0 {
		// Neither letter can be there (their first bytes are missing): a byte for a byte.
		for i, c := range out {
			out[i] = lowerByte[c]
		}
		return append(buf, '\n')
	}
	w := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < utf8.RuneSelf {
			c = lowerByte[c]
		} else if c == 0xe2 && strings.HasPrefix(s[i:], "\u212a") {
			c, i = 'k', i+2
		} else if c == 0xc5 && strings.HasPrefix(s[i:], "\u017f") {
			c, i = 's', i+1
		}
		out[w] = c
		w++
	}
	return append(buf[:n+w], '\n')
}
