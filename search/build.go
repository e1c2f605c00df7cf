package search

import (
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/gloss"
)

// Building an index runs in three steps so that the costly parts use every core:
//
//  1. In parallel over runs of tools, each worker tokenizes its tools, names each new
//     surface form (a lowercased token) with a worker-local number, stems it, and records
//     per tool how often each surface form occurs in each field. Workers take their
//     tools a chunk at a time (see segment), so each ends up with as much as its speed
//     allowed.
//  2. One goroutine gives every distinct stem a global term id.
//  3. In parallel again, each worker rewrites its records in term ids (merging surface
//     forms that share a stem) and writes its tools' postings, each worker into its own
//     reserved part of every posting list.

// posting is one (term, tool) pair while building: the term's frequency in each field,
// saturating at 255 (BM25's saturation makes any count past a few dozen count the same).
type posting struct {
	term int32
	tf   [numFields]uint8
}

// worker is the state of one build worker. It takes chunks of tools from one end of
// its segment; once step 1 is done, they make one run of tools.
type worker struct {
	seg    *segment
	back   bool    // whether the worker takes chunks from the end of its segment
	chunks []chunk // the chunks taken, in the order taken

	surface *termTable  // hash of a lowercased token -> local surface number, -1 for a stop word
	stems   []stem      // local surface number -> its term
	termOf  []int32     // local surface number -> global term id, from step 2
	blocks  [][]posting // the entries of the tools taken: per tool, one per surface form
	entries []posting   // the block being filled: the last of blocks
	base    int32       // the position of entries[0] (see count)
	// span and lens, shared by all the workers, have a place for every tool of the
	// catalog: tool d's entries are block[span[d][0]:span[d][1]] of the block of the
	// chunk that holds d, and lens[d] are its field lengths.
	span      [][2]int32
	lens      [][numFields]uint32
	df        []int32 // per term, within this worker's tools
	total     int     // entries of the worker's tools, once remap has merged them
	buf       []byte
	emit      func([]byte, uint64)
	fresh     []newWord     // words no build had stemmed, waiting for stemNew
	freshText []byte        // their text, lowercased, one after another
	builtin   []stemmedWord // words no build had stemmed, whose stems stemdict.txt gave
	query     *queryWords   // set when the worker analyzes a query instead of tools

	longestName int  // bytes of the longest bare or qualified name of the worker's tools
	chinese     bool // whether text has met a character package gloss may know since it was cleared

	cut    [maxParts + 1]int32 // where the parts of the word being split start
	start  int32               // the position where the current tool's entries start
	field  int
	docLen [numFields]uint32 // the current tool's field lengths
}

// chunk is a run of tools a worker took, whose entries are in blocks[block].
type chunk struct {
	from, to int32
	block    int32
}

// chunkLen is how many tools a worker takes at a time: few enough that the workers of a
// segment finish within a tenth of a millisecond of each other, and enough that taking
// them costs nothing.
const chunkLen = 32

// segment is a run of tools that two workers share: one takes chunks from its start,
// the other from its end, until they meet. Each worker so ends up with a run of tools,
// as posting lists need (see postings), of the length its speed allowed. A split fixed
// in advance cannot know that: text costs what its script costs (Chinese about five
// times English per byte), and the garbage collector takes a core from one worker or
// the other for milliseconds at a time.
type segment struct {
	from, to int
	taken    atomic.Int32 // chunks taken by either worker
}

// chunks is how many chunks the segment's tools make.
func (s *segment) chunks() int { return (s.to - s.from + chunkLen - 1) / chunkLen }

// newWorkers divides tools among up to GOMAXPROCS workers, two to a segment; small
// catalogs get one worker.
func newWorkers(tools []*catalog.Tool) []*worker {
	n := len(tools)
	return newWorkersK(tools, min(runtime.GOMAXPROCS(0), max(1, n/250), 16))
}

// newWorkersK divides tools among k workers, two to a segment and the last alone when k
// is odd. Each segment has tools in proportion to its workers.
func newWorkersK(tools []*catalog.Tool, k int) []*worker {
	n := len(tools)
	span := make([][2]int32, n)
	lens := make([][numFields]uint32, n)
	ws := make([]*worker, k)
	for i := 0; i < k; i += 2 {
		seg := &segment{from: n * i / k, to: n * min(i+2, k) / k}
		ws[i] = &worker{seg: seg, span: span, lens: lens}
		if i+1 < k {
			ws[i+1] = &worker{seg: seg, back: true, span: span, lens: lens}
		}
	}
	return ws
}

// take returns the next chunk of the worker's segment from the worker's end, or false
// when the segment's chunks are all taken.
func (w *worker) take() (from, to int, ok bool) {
	s := w.seg
	n := s.chunks()
	if int(s.taken.Add(1)) > n {
		return 0, 0, false
	}
	// Between them the two workers take at most n chunks, so the first worker's i-th
	// and the second's i-th from the end never meet.
	i := len(w.chunks)
	if w.back {
		i = n - 1 - i
	}
	from = s.from + i*chunkLen
	return from, min(from+chunkLen, s.to), true
}

// eachChunk calls fn for each of the worker's chunks in the order of their tools.
func (w *worker) eachChunk(fn func(c chunk)) {
	for i := range w.chunks {
		j := i
		if w.back {
			j = len(w.chunks) - 1 - i // taken from the end
		}
		fn(w.chunks[j])
	}
}

// eachTool calls fn for each of the worker's tools in order, with the block that holds
// its entries at span.
func (w *worker) eachTool(fn func(d int, block []posting)) {
	w.eachChunk(func(c chunk) {
		block := w.blocks[c.block]
		for d := c.from; d < c.to; d++ {
			fn(int(d), block)
		}
	})
}

// inOrder returns the worker's surface numbers in the order in which they first appear
// in its tools, which for a worker that took its chunks from the end of its segment is
// not the order in which it met them.
func (w *worker) inOrder() []int32 {
	seen := make([]bool, len(w.stems))
	order := make([]int32, 0, len(w.stems))
	w.eachChunk(func(c chunk) {
		// A chunk's entries are one run of its block until remap merges them.
		for _, e := range w.blocks[c.block][w.span[c.from][0]:w.span[c.to-1][1]] {
			if !seen[e.term] {
				seen[e.term] = true
				order = append(order, e.term)
			}
		}
	})
	return order
}

// NewIndexParams builds an index over snap with the given ranking parameters.
func NewIndexParams(snap *catalog.Snapshot, p Params) *Index {
	tools := snap.Tools()
	// The 4-grams, when ranking uses them, are made beside the whole build.
	var grams [][]uint32
	var gramsDone sync.WaitGroup
	if p.Grams > 0 {
		gramsDone.Go(func() { grams = buildGrams(tools) })
	}
	workers := newWorkers(tools)
	nameHashes := make([]uint64, 2*len(tools))
	parallel(workers, func(_ int, w *worker) { w.tokenize(tools, nameHashes) })
	ix := assemble(snap, p, workers, nameHashes)
	gramsDone.Wait()
	ix.grams = grams
	return ix
}

// assemble makes the index from the workers once they have run step 1.
func assemble(snap *catalog.Snapshot, p Params, workers []*worker, nameHashes []uint64) *Index {
	n := snap.Len()
	ix := &Index{snap: snap, params: p, coords: make([][]float32, 64)}
	factors := make([]float32, 0, 64*65/2) // all the tables, in one allocation
	for nq := range ix.coords {
		factors = appendCoord(factors, nq, p.Coord)
		ix.coords[nq] = factors[len(factors)-nq-1 : len(factors) : len(factors)]
	}
	// Beside the steps that follow, which keep one goroutine busy for a while, other
	// goroutines put the surface forms of the workers that went backwards in order, and
	// index the tools' names.
	var ordered, named sync.WaitGroup
	orders := make([][]int32, len(workers))
	ordered.Go(func() {
		for i, w := range workers {
			if w.back {
				orders[i] = w.inOrder()
			}
		}
	})
	named.Go(func() { ix.exact = buildExact(nameHashes) })
	published := stemNew(workers)
	defer published()

	// Step 2: global term ids, in order of first appearance in the catalog, so that an
	// index does not depend on where the workers met.
	guess := len(workers[0].stems) + len(workers[0].stems)/2 // the first worker meets most terms
	ix.terms = newTermTable(guess)
	ix.termText = make([]string, 0, guess)
	termID := func(st stem) int32 {
		slot, seen := ix.terms.find(st.hash)
		if !seen {
			slot.id = int32(len(ix.termText))
			ix.termText = append(ix.termText, st.text)
		}
		return slot.id
	}
	for i, w := range workers {
		w.termOf = make([]int32, len(w.stems))
		if !w.back {
			// The worker met its tools in order, so its words too.
			for id, st := range w.stems {
				w.termOf[id] = termID(st)
			}
			continue
		}
		ordered.Wait()
		for _, id := range orders[i] {
			w.termOf[id] = termID(w.stems[id])
		}
	}
	// The guesses that sized the term table and texts are well above the terms found
	// (twice at 10,000 tools), and the index keeps both as long as it lives.
	nt := len(ix.termText)
	ix.terms.fit()
	ix.termText = append(make([]string, 0, nt), ix.termText...)
	parallel(workers, func(i int, w *worker) {
		if i == 0 {
			ix.surfaces = mergeSurfaces(workers)
			ix.surfaces.fit() // a small catalog needs less than the workers' starting size
		}
		w.remap(nt)
	})
	for _, w := range workers {
		w.stems, w.termOf, w.surface, w.fresh, w.freshText, w.builtin = nil, nil, nil, nil, nil, nil
	}

	var sumLen [numFields]float64
	for _, l := range workers[0].lens { // every tool's, shared by the workers
		for f := range numFields {
			sumLen[f] += float64(l[f])
		}
	}
	df := make([]int32, nt)
	total := 0
	for _, w := range workers {
		for t, c := range w.df {
			df[t] += c
		}
		total += w.total
	}
	var avgLen [numFields]float64
	for f := range numFields {
		avgLen[f] = math.Max(sumLen[f]/math.Max(float64(n), 1), 1)
	}
	ix.postStart = make([]int32, nt+1)
	for t, c := range df {
		ix.postStart[t+1] = ix.postStart[t] + c
	}
	ix.postDoc = make([]int32, total)
	ix.postScore = make([]float32, total)
	// Each worker writes its tools, which come after the earlier workers' tools, into
	// the part of each posting list after the earlier workers' parts: lists stay sorted.
	next := make([]int32, nt)
	copy(next, ix.postStart[:nt])
	fills := make([][]int32, len(workers))
	for i, w := range workers {
		fills[i] = make([]int32, nt)
		copy(fills[i], next)
		for t, c := range w.df {
			next[t] += c
		}
	}
	parallel(workers, func(i int, w *worker) {
		w.postings(ix, fills[i], avgLen)
		// The records are garbage now. Pooling them for the next build saved that
		// build their allocation, but kept them (more than the index itself) live for
		// two collections after every build, and a gateway builds rarely.
		w.blocks, w.entries = nil, nil
	})

	ix.idf = make([]float32, nt)
	ix.maxScore = make([]float32, nt)
	// Each worker takes a share of the terms, cut where the postings divide evenly.
	parallel(workers, func(i int, _ *worker) {
		from := termAt(ix.postStart, i, len(workers))
		to := termAt(ix.postStart, i+1, len(workers))
		for t := from; t < to; t++ {
			c := float64(df[t])
			ix.idf[t] = float32(math.Log(1 + (float64(n)-c+0.5)/(c+0.5)))
			best := float32(0)
			for _, sc := range ix.postScore[ix.postStart[t]:ix.postStart[t+1]] {
				best = max(best, sc)
			}
			ix.maxScore[t] = best
		}
	})
	named.Wait()
	for _, w := range workers {
		ix.exact.longest = max(ix.exact.longest, w.longestName)
	}
	return ix
}

// termAt returns the first term of share i of k, cutting the terms so that each share
// has about as many postings: the first term whose postings start at or after i/k of all.
func termAt(postStart []int32, i, k int) int {
	nt := len(postStart) - 1
	if i >= k {
		return nt
	}
	want := int32(int64(postStart[nt]) * int64(i) / int64(k))
	return sort.Search(nt, func(t int) bool { return postStart[t] >= want })
}

// blockLen is the capacity of a block of entries unless a chunk needs more.
const blockLen = 1 << 14

// textSize is the length of the text of t that a build analyzes.
func textSize(t *catalog.Tool) int {
	size := len(t.Name) + len(t.SearchTitle()) + len(t.SearchDescription()) + len(t.Server)
	for _, w := range t.Search.Keywords {
		size += len(w) + 1
	}
	for _, w := range t.Search.Aliases {
		size += len(w) + 1
	}
	for i := range t.Params {
		size += len(t.Params[i].Name) + len(t.Params[i].Description)
		for _, v := range t.Params[i].Enum {
			size += len(v)
		}
	}
	return size
}

// parallel runs fn for every worker and its index, each on its own goroutine, and waits.
func parallel(ws []*worker, fn func(int, *worker)) {
	if len(ws) == 1 {
		fn(0, ws[0])
		return
	}
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i, w)
		}()
	}
	wg.Wait()
}

// tokenize is step 1: the worker takes chunks of tools until none are left. It also
// fills in the hashes of their normalized bare and qualified names (see exactNames).
func (w *worker) tokenize(tools []*catalog.Tool, nameHashes []uint64) {
	w.surface = newTermTable(4096)
	w.emit = w.emitToken
	for {
		from, to, ok := w.take()
		if !ok {
			break
		}
		w.room(tools[from:to])
		for d := from; d < to; d++ {
			w.tool(d, tools[d])
			nameHashes[2*d] = nameHash(tools[d].Name)
			nameHashes[2*d+1] = nameHash(tools[d].Qualified)
		}
		w.blocks[len(w.blocks)-1] = w.entries // append may have moved it
		w.chunks = append(w.chunks, chunk{from: int32(from), to: int32(to), block: int32(len(w.blocks) - 1)})
	}
}

// room makes sure the block being filled has room for the entries of tools, or starts a
// new block. Text has about one entry per 14 bytes; room asks for one per 10, and a
// chunk that needs more still makes append grow the block.
func (w *worker) room(tools []*catalog.Tool) {
	size := 0
	for _, t := range tools {
		size += textSize(t)
	}
	need := size/10 + 64
	if w.blocks != nil && cap(w.entries)-len(w.entries) >= need {
		return
	}
	// Positions only grow, so the positions an earlier block left in the surface table
	// stay before any tool's start.
	w.base += int32(len(w.entries))
	w.entries = make([]posting, 0, max(need, blockLen))
	w.blocks = append(w.blocks, w.entries)
}

// tool analyzes tool d, t, into the block being filled.
func (w *worker) tool(d int, t *catalog.Tool) {
	first := int32(len(w.entries))
	w.start = w.base + first
	w.docLen = [numFields]uint32{}
	w.text(fieldName, t.Name)
	// An operator's aliases are other names, and keywords words as telling as a title
	// (see catalog.SearchText).
	for _, a := range t.Search.Aliases {
		w.text(fieldName, a)
	}
	w.text(fieldTitle, t.SearchTitle())
	for _, k := range t.Search.Keywords {
		w.text(fieldTitle, k)
	}
	w.chinese = false
	desc := t.SearchDescription()
	w.text(fieldDesc, desc)
	if w.chinese {
		w.glosses(desc)
	}
	for _, p := range t.Params {
		w.text(fieldParamName, p.Name)
		w.text(fieldParamDesc, p.Description)
		for _, v := range p.Enum {
			w.text(fieldParamDesc, v)
		}
	}
	w.text(fieldServer, t.Server)
	w.span[d] = [2]int32{first, int32(len(w.entries))}
	w.lens[d] = w.docLen
	w.longestName = max(w.longestName, len(t.Name), len(t.Qualified))
}

// text analyzes s as field f of the worker's current tool. It is tokenize specialized
// for the build, where it runs over every byte of the catalog: one pass over each word
// finds its camelCase and letter/digit parts and hashes them, and a token's text is only
// materialized the first time the worker sees it. tokenize remains the definition;
// TestBuildMatchesTokenize keeps the two in step.
func (w *worker) text(f int, s string) {
	w.field = f
	i := 0
	for i < len(s) {
		c := s[i]
		cls := byteClass[c]
		if cls == 0 {
			i++
			continue
		}
		if cls == clsHigh {
			if isCJK(s, i) {
				// Most non-ASCII text of tool definitions is Chinese, a token per
				// character: take it without the general tokenizer's decoding.
				w.chinese = true
				addToken(w, hashCJK(s, i), s[i:i+3])
				i += 3
				continue
			}
			i = w.unicodeText(s, i)
			continue
		}
		// One ASCII word: find where its parts start as it is scanned.
		start, np := i, 0
		prev := cls
		for i++; i < len(s); i++ {
			next := byteClass[s[i]]
			if next == prev && next != clsUpper {
				continue // within a run of lowercase letters or of digits: no boundary
			}
			if next == 0 || next == clsHigh {
				break
			}
			if splits[(prev<<3|next)&63] || prev == clsUpper && next == clsUpper && i+1 < len(s) && byteClass[s[i+1]] == clsLower {
				if np == maxParts-1 {
					break
				}
				np++
				w.cut[np] = int32(i)
			}
			prev = next
		}
		if np == maxParts-1 || i < len(s) && byteClass[s[i]] == clsHigh && w.continuesWord(s, i) {
			// A word of very many parts, or one such as "café" that goes on in
			// non-ASCII letters: the general path.
			i = w.unicodeText(s, start)
			continue
		}
		if np == 0 {
			addToken(w, hashIn(s, start, i), s[start:i])
			continue
		}
		w.cut[0], w.cut[np+1] = int32(start), int32(i)
		for k := 0; k <= np; k++ {
			from, to := int(w.cut[k]), int(w.cut[k+1])
			addToken(w, hashIn(s, from, to), s[from:to])
		}
		addToken(w, hashIn(s, start, i), s[start:i])
	}
}

// glosses analyzes the English glosses of the Chinese words of s (see package gloss) as
// more text of the current field: a tool's description, so that a request in English
// finds a tool described in Chinese, or a query, so that a request in Chinese finds a
// tool described in English. It allocates the text, since the worker may keep words
// of it.
func (w *worker) glosses(s string) {
	w.buf = gloss.Append(w.buf[:0], s)
	if len(w.buf) > 0 {
		w.text(w.field, string(w.buf))
	}
}

// isCJK reports whether s[i:] starts with a CJK Unified Ideograph (U+4E00 to U+9FFF),
// three bytes in UTF-8, which tokenize makes a token of its own. Package gloss defines
// the range, as its table's.
func isCJK(s string, i int) bool { return gloss.CharAt(s, i) >= 0 }

// hashK0x3 is 3*hashK0 modulo 2^64, the start of hashToken for three bytes.
const hashK0x3 = 0xdaa66d2c7ddf743f

// hashCJK is hashToken of the three bytes of the character at s[i].
func hashCJK(s string, i int) uint64 {
	x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16
	return hashMix(hashMix(hashK0x3 ^ x))
}

// maxParts is the most parts text splits a word into before leaving it to tokenize.
const maxParts = 16

// continuesWord reports whether the non-ASCII text at s[i] continues a word.
func (w *worker) continuesWord(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !isIdeograph(r) && isWordRune(r)
}

// unicodeText analyzes the stretch of s from i to the next ASCII separator or Chinese
// character with the general tokenizer, and returns where it stopped. A Chinese
// character is a token of its own, so text can take it from there.
func (w *worker) unicodeText(s string, i int) int {
	j := i
	for j < len(s) && byteClass[s[j]] != 0 {
		if gloss.MayStart(s[j]) {
			if j > i && isCJK(s, j) {
				break
			}
			w.chinese = true
		}
		j++
	}
	w.buf = tokenize(s[i:j], w.buf, w.emit)
	return j
}

// emitToken is addToken for the general tokenizer's tokens, which live in a buffer.
func (w *worker) emitToken(tok []byte, h uint64) { addToken(w, h, tok) }

// addToken records one token of the current tool and field, given the hash of its
// lowercased text and the text itself in any case; or, when the worker analyzes a
// query, hands it to queryWord.
func addToken[T string | []byte](w *worker, h uint64, tok T) {
	if w.query != nil {
		queryWord(w.query, h, tok)
		return
	}
	s, seen := w.surface.find(h)
	if !seen {
		s.id = newSurface(w, h, tok)
	}
	w.count(s)
}

// count counts the token of slot s in the current tool and field.
func (w *worker) count(s *termSlot) {
	if s.id < 0 {
		return // a stop word: not a term, and not counted in the field's length
	}
	// s.at is the position of the token's latest entry: its index in the block being
	// filled plus w.base. Positions before w.start are earlier tools'.
	if s.at < w.start {
		s.at = w.base + int32(len(w.entries))
		w.entries = append(w.entries, posting{term: s.id})
	}
	e := &w.entries[s.at-w.base]
	if e.tf[w.field] < math.MaxUint8 {
		e.tf[w.field]++
	}
	w.docLen[w.field]++
}

// newSurface numbers a surface form the worker has not seen; stop words get -1. A word
// no build has stemmed before takes its stem from stemdict.txt if it is common, or else
// keeps an empty term until stemNew fills it in. The text is copied only then, and only
// when it lives in a buffer.
func newSurface[T string | []byte](w *worker, h uint64, tok T) int32 {
	term, known := cachedStem(h)
	if !known {
		if term, known = builtinStem(h, tok); known {
			w.builtin = appendDoubling(w.builtin, stemmedWord{h: h, stem: term})
		}
	}
	stop := known && term.text == ""
	if !known {
		var buf [64]byte
		stop = stopWords[string(appendLower(buf[:0], tok))]
		if !stop {
			// The word is copied now, while it is in the processor's cache; the
			// stemmers would find it scattered over the catalog.
			w.freshText = appendLower(w.freshText, tok)
			w.fresh = appendDoubling(w.fresh, newWord{id: int32(len(w.stems)), h: h, end: int32(len(w.freshText))})
		}
	}
	if stop {
		return -1
	}
	w.stems = appendDoubling(w.stems, term)
	return int32(len(w.stems) - 1)
}

// appendDoubling is append for the lists a build grows one surface form at a time: it
// doubles their capacity when they are full. append grows a long slice by a quarter at
// a time, so for those lists a build allocated five times their final size, which the
// garbage collector then had to keep up with.
func appendDoubling[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 256))
	}
	return append(s, v)
}

// mergeSurfaces turns the workers' surface tables into one table from the hash of every
// lowercased token the catalog uses to its term id, -1 for a stop word, so that a query
// word the catalog uses costs one lookup instead of stemming. The first worker's table
// becomes it; the others' tokens are added to it.
func mergeSurfaces(workers []*worker) *termTable {
	base, w0 := workers[0].surface, workers[0]
	for i := range base.slots {
		if s := &base.slots[i]; s.key != 0 && s.id >= 0 {
			s.id = w0.termOf[s.id]
		}
	}
	for _, w := range workers[1:] {
		for _, s := range w.surface.slots {
			if s.key == 0 {
				continue
			}
			if slot, seen := base.find(s.key); !seen {
				slot.id = s.id
				if s.id >= 0 {
					slot.id = w.termOf[s.id]
				}
			}
		}
	}
	return base
}

// remap is step 3's first half: entries in term ids, surface forms of one stem merged,
// and per-term tool counts.
func (w *worker) remap(nt int) {
	local := w.termOf
	w.df = make([]int32, nt)
	last := make([]int32, nt)
	slot := make([]int32, nt)
	for t := range last {
		last[t] = -1
	}
	df, total := w.df, 0
	w.eachTool(func(d int, block []posting) {
		// The merged entries are written over the ones read: n never passes the reader.
		// Entries are copied whole and then given their term, which the compiler does
		// with two stores; building a new posting from the term and e.tf made it
		// assemble the posting on the stack in pieces and read it back whole, a stall
		// that cost half of remap.
		sp := &w.span[d]
		n := sp[0]
		for j := sp[0]; j < sp[1]; j++ {
			e := &block[j]
			t := local[e.term]
			if last[t] != int32(d) {
				last[t], slot[t] = int32(d), n
				block[n] = *e
				block[n].term = t
				n++
				df[t]++
				continue
			}
			m := &block[slot[t]]
			for f := range numFields {
				m.tf[f] = uint8(min(int(m.tf[f])+int(e.tf[f]), math.MaxUint8))
			}
		}
		total += int(n - sp[0])
		sp[1] = n
	})
	w.total = total
}

// postings is step 3's second half: the BM25F weight of every (term, tool) pair of the
// worker's tools, written at fill[term], which advances. The worker's tools come in
// order and after the earlier workers' tools, so every posting list comes out sorted.
func (w *worker) postings(ix *Index, fill []int32, avgLen [numFields]float64) {
	p := &ix.params
	var norm [numFields]float64
	w.eachTool(func(d int, block []posting) {
		for f := range numFields {
			norm[f] = p.Weight[f] / (1 - p.B[f] + p.B[f]*float64(w.lens[d][f])/avgLen[f])
		}
		sp := w.span[d]
		for _, e := range block[sp[0]:sp[1]] {
			var tf float64
			for f := range numFields {
				tf += float64(e.tf[f]) * norm[f] // most are 0: adding beats a branch
			}
			at := fill[e.term]
			fill[e.term]++
			ix.postDoc[at] = int32(d)
			ix.postScore[at] = float32(tf * (p.K1 + 1) / (tf + p.K1))
		}
	})
}
