package search

import (
	"runtime"
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

// stemTable maps the hashToken of a lowercased token to normalize's answer for it.
type stemTable struct {
	words *termTable // token hash -> index in stems
	stems []stem
}

func (t *stemTable) get(h uint64) (stem, bool) {
	if i, ok := t.words.lookup(h); ok {
		return t.stems[i], true
	}
	return stem{}, false
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
// local number, hash, and where its text ends in the worker's freshText (it starts where
// the worker's previous new word ends).
type newWord struct {
	id  int32
	end int32
	h   uint64
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
//
// Publishing copies the whole table on one goroutine while the build goes on, with the
// words whose stems the workers took from stemdict.txt; the returned function waits
// for it.
func stemNew(workers []*worker) (wait func()) {
	total := 0
	var learned [][]stemmedWord
	for _, w := range workers {
		total += len(w.fresh)
		if len(w.builtin) > 0 {
			learned = append(learned, w.builtin)
		}
	}
	if total > 0 {
		k := min(runtime.GOMAXPROCS(0), max(1, total/500), 16)
		stemmed := make([][]stemmedWord, k)
		var wg sync.WaitGroup
		for i := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stemmed[i] = stemShare(workers, i, k, total/k*9/8+16)
			}()
		}
		wg.Wait()
		learned = append(learned, stemmed...)
	}
	if len(learned) == 0 {
		return func() {}
	}
	published := make(chan struct{})
	go func() {
		publish(learned)
		close(published)
	}()
	return func() { <-published }
}

// stemShare is stemmer i of k: it stems the new words whose hash is in its share and
// writes each stem into every worker that met the word. Its share is about size words.
func stemShare(workers []*worker, i, k, size int) []stemmedWord {
	type ref struct{ worker, id, word int32 } // workers[worker].stems[id] is mine[word]
	seen := newTermTable(size)                // hash -> index in mine
	var (
		mine  = make([]stemmedWord, 0, size)
		refs  = make([]ref, 0, size)
		lower []byte                   // the words of mine, lowercased, one after another
		ends  = make([]int32, 0, size) // where each word of mine ends in lower
	)
	for wi, v := range workers {
		for j, nw := range v.fresh {
			if (nw.h>>40)%uint64(k) != uint64(i) {
				continue
			}
			s, ok := seen.find(nw.h)
			if !ok {
				s.id = int32(len(mine))
				mine = append(mine, stemmedWord{h: nw.h})
				start := int32(0)
				if j > 0 {
					start = v.fresh[j-1].end
				}
				lower = append(lower, v.freshText[start:nw.end]...)
				ends = append(ends, int32(len(lower)))
			}
			refs = append(refs, ref{int32(wi), nw.id, s.id})
		}
	}
	// One string holds the lowercase copies of all the words, so that the process-wide
	// table keeps no tool's text alive, for one allocation instead of one a word.
	text := string(lower)
	from := int32(0)
	for j, end := range ends {
		mine[j].stem = stemOfText(normalize(text[from:end]))
		from = end
	}
	for _, r := range refs {
		workers[r.worker].stems[r.id] = mine[r.word].stem
	}
	return mine
}

// publish adds newly learned words, stemmed or taken from stemdict.txt, to a copy of the
// published table and publishes it. Past stemCacheMax words the table stops growing.
func publish(learned [][]stemmedWord) {
	publishMu.Lock()
	defer publishMu.Unlock()
	n := 0 // at most this many words are new: workers often learn the same word
	for _, words := range learned {
		n += len(words)
	}
	t := &stemTable{}
	if old := published.Load(); old != nil {
		if len(old.stems) >= stemCacheMax {
			return
		}
		t.words = old.words.clone()
		t.stems = append(make([]stem, 0, min(len(old.stems)+n, stemCacheMax)), old.stems...)
	} else {
		t.words = newTermTable(n)
		t.stems = make([]stem, 0, min(n, stemCacheMax))
	}
	for _, words := range learned {
		for _, w := range words {
			if len(t.stems) == stemCacheMax {
				break
			}
			if s, seen := t.words.find(w.h); !seen {
				s.id = int32(len(t.stems))
				t.stems = append(t.stems, w.stem)
			}
		}
	}
	// The sizes above count a word once for every worker that learned it: the stems
	// and the table, which the process keeps, get only the room the words take.
	t.words.fit()
	if cap(t.stems) > len(t.stems) {
		t.stems = append(make([]stem, 0, len(t.stems)), t.stems...)
	}
	published.Store(t)
}
