package search

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// Stemming is the costliest step of analysis (close to a microsecond a word), catalogs
// share most of their vocabulary, and the gateway rebuilds indexes as servers come and
// go. So every word an index build stems is remembered for the whole process, in a table
// keyed by the token hash the build computes anyway.
//
// The table is immutable once published: build workers read it with one atomic load and
// no lock, and each build that met new words publishes a copy with them added.

// stem is an index term with its hashToken, which the index's term table is keyed by.
type stem struct {
	text string // "" for a stop word
	hash uint64
}

// stemOfText returns the stem of a term known only by its text.
func stemOfText(term string) stem { return stem{term, hashToken([]byte(term))} }

// stemTable maps the hashToken of a lowercased token to normalize's answer for it. It is
// open addressing over one flat array, so a lookup touches one slot.
type stemTable struct {
	slots []stemSlot
	n     int
}

type stemSlot struct {
	key uint64 // 0 marks an empty slot; hashes of 0 are stored as 1
	val stem
}

func (t *stemTable) get(h uint64) (stem, bool) {
	if h == 0 {
		h = 1
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case h:
			return t.slots[i].val, true
		case 0:
			return stem{}, false
		}
	}
}

// put adds h unless it is there; the table must have a free slot.
func (t *stemTable) put(h uint64, v stem) {
	if h == 0 {
		h = 1
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case h:
			return
		case 0:
			t.slots[i] = stemSlot{h, v}
			t.n++
			return
		}
	}
}

var (
	published atomic.Pointer[stemTable] // nil until the first build
	publishMu sync.Mutex                // serializes publishers
)

// cachedStem returns normalize's answer for the token with hash h if a build has seen it.
func cachedStem(h uint64) (stem, bool) {
	if t := published.Load(); t != nil {
		return t.get(h)
	}
	return stem{}, false
}

// newWord is a surface form a build worker met that the published table lacks: its
// local number, hash and text, lowercased except for ASCII letters.
type newWord struct {
	id   int32
	h    uint64
	text string
}

// stemmedWord is a new word's hash and stem.
type stemmedWord struct {
	h    uint64
	stem stem
}

// stemNew stems the words the workers met that no build had seen, and publishes them.
//
// A word is often new to several workers at once (their tools share vocabulary), so the
// work is split by hash rather than by worker, among as many stemmers as there are
// cores and words to keep them busy: stemmer k stems every new word, from whichever
// worker, whose hash falls in its share, once, and writes the stem into every worker
// that met it. The writes go to distinct entries of the workers' stems, so no lock is
// needed.
func stemNew(workers []*worker) {
	total := 0
	for _, w := range workers {
		total += len(w.fresh)
	}
	if total == 0 {
		return
	}
	k := min(runtime.GOMAXPROCS(0), max(1, total/500), 16)
	stemmed := make([][]stemmedWord, k)
	var wg sync.WaitGroup
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := newTermTable(total/k + 16) // hash -> index in mine
			var mine []stemmedWord
			for _, v := range workers {
				for _, nw := range v.fresh {
					if (nw.h>>40)%uint64(k) != uint64(i) {
						continue
					}
					s, ok := seen.find(nw.h)
					if !ok {
						s.id = int32(len(mine))
						mine = append(mine, stemmedWord{nw.h, stemOfText(normalize(lowerCopy(nw.text)))})
					}
					v.stems[nw.id] = mine[s.id].stem
				}
			}
			stemmed[i] = mine
		}()
	}
	wg.Wait()
	publish(stemmed)
}

// publish adds newly stemmed words to a copy of the published table and publishes it.
// Past stemCacheMax words the table stops growing.
func publish(stemmed [][]stemmedWord) {
	publishMu.Lock()
	defer publishMu.Unlock()
	old := published.Load()
	n := 0
	if old != nil {
		n = old.n
	}
	add := 0
	for _, words := range stemmed {
		add += len(words)
	}
	add = min(add, stemCacheMax-n)
	if add <= 0 {
		return
	}
	size := 1024
	for size < 2*(n+add) {
		size <<= 1
	}
	t := &stemTable{slots: make([]stemSlot, size)}
	if old != nil {
		for _, s := range old.slots {
			if s.key != 0 {
				t.put(s.key, s.val)
			}
		}
	}
	for _, words := range stemmed {
		for _, s := range words {
			if t.n == n+add {
				break
			}
			t.put(s.h, s.stem)
		}
	}
	published.Store(t)
}

// lowerCopy returns s with its ASCII letters lowercased, always as a new string: a word
// of a tool's text must not keep the whole text alive in the process-wide stem table.
func lowerCopy(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		b.WriteByte(lowerByte[s[i]])
	}
	return b.String()
}
