package search

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"weak"

	"github.com/toolshed/toolshed/catalog"
)

// TestBuildWhereverWorkersMeet checks that an index does not depend on where the two
// workers of a segment meet: whether one of them takes every chunk or they share the
// chunks in any proportion, the build makes the same index, and the same as a build that
// splits the tools among as many workers as the cores allow.
func TestBuildWhereverWorkersMeet(t *testing.T) {
	snap := trickyCatalog(t, 2100)
	tools := snap.Tools()
	m := newWorkersK(tools, 2)[0].seg.chunks()
	want := NewIndex(snap)
	for _, front := range []int{0, 1, m / 3, m - 1, m} {
		ws := newWorkersK(tools, 2)
		hashes := make([]uint64, 2*len(tools))
		// The second worker takes m-front chunks from the end, the first the rest.
		ws[0].seg.taken.Store(int32(front))
		ws[1].tokenize(tools, hashes)
		ws[0].seg.taken.Store(int32(m - front))
		ws[0].tokenize(tools, hashes)
		if len(ws[0].chunks) != front || len(ws[1].chunks) != m-front {
			t.Fatalf("the workers took %d and %d chunks, want %d and %d", len(ws[0].chunks), len(ws[1].chunks), front, m-front)
		}
		if diff := indexDiff(assemble(snap, DefaultParams, ws, hashes), want); diff != "" {
			t.Errorf("first worker with %d of %d chunks: %s", front, m, diff)
		}
	}
}

// TestBuildAnyWorkers checks that a build makes the same index with any number of
// workers, each meeting its partner wherever the scheduler lets it.
func TestBuildAnyWorkers(t *testing.T) {
	snap := trickyCatalog(t, 2100)
	tools := snap.Tools()
	want := NewIndex(snap)
	for _, k := range []int{1, 2, 3, 4, 7} {
		for range 3 {
			ws := newWorkersK(tools, k)
			hashes := make([]uint64, 2*len(tools))
			parallel(ws, func(_ int, w *worker) { w.tokenize(tools, hashes) })
			if diff := indexDiff(assemble(snap, DefaultParams, ws, hashes), want); diff != "" {
				t.Fatalf("%d workers: %s", k, diff)
			}
		}
	}
}

// TestTakeEveryChunkOnce checks that the two workers of a segment, taking chunks at
// once, take each chunk exactly once, the first worker a run from the segment's start
// and the second the rest.
func TestTakeEveryChunkOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{1, chunkLen - 1, chunkLen, chunkLen + 1, 1000, 4099} {
		ws := newWorkersK(make([]*catalog.Tool, n), 2)
		got := make([][][2]int, 2)
		var wg sync.WaitGroup
		for i, w := range ws {
			wg.Go(func() {
				for {
					from, to, ok := w.take()
					if !ok {
						return
					}
					got[i] = append(got[i], [2]int{from, to})
					w.chunks = append(w.chunks, chunk{}) // take counts what the worker took
				}
			})
		}
		wg.Wait()
		slices.Reverse(got[1])
		all := append(got[0], got[1]...)
		next := 0
		for _, c := range all {
			if c[0] != next || c[1] <= c[0] || c[1]-c[0] > chunkLen {
				t.Fatalf("%d tools: chunks %v do not cover the tools in order", n, all)
			}
			next = c[1]
		}
		if next != n {
			t.Fatalf("%d tools: chunks %v end at %d", n, all, next)
		}
	}
}

// indexDiff describes the first difference between two indexes over one catalog, or
// returns "" if they are the same.
func indexDiff(a, b *Index) string {
	for _, f := range []struct {
		name string
		a, b any
	}{
		{"terms", a.termText, b.termText},
		{"idf", a.idf, b.idf},
		{"posting starts", a.postStart, b.postStart},
		{"posting tools", a.postDoc, b.postDoc},
		{"posting scores", a.postScore, b.postScore},
		{"best scores", a.maxScore, b.maxScore},
		{"exact names", a.exact, b.exact},
	} {
		if !reflect.DeepEqual(f.a, f.b) {
			return f.name + " differ"
		}
	}
	if a.surfaces.n != b.surfaces.n {
		return fmt.Sprintf("%d surface forms against %d", a.surfaces.n, b.surfaces.n)
	}
	for _, s := range a.surfaces.slots {
		if s.key == 0 {
			continue
		}
		if id, ok := b.surfaces.lookup(s.key); !ok || id != s.id {
			return fmt.Sprintf("surface form %x is term %d against %d", s.key, s.id, id)
		}
	}
	return ""
}

// TestBuildKeepsNoScratch checks that once an index is built, the per-tool records the
// build workers wrote (a few megabytes at 10,000 tools, more than the index itself) are
// garbage at the next collection, not kept for a later build: a gateway builds its
// index at start-up and then rarely, and every megabyte kept live costs about two of
// its resident memory.
func TestBuildKeepsNoScratch(t *testing.T) {
	snap, _ := scaleCatalog(t, 2000)
	tools := snap.Tools()
	ws := newWorkersK(tools, 2)
	hashes := make([]uint64, 2*len(tools))
	parallel(ws, func(_ int, w *worker) { w.tokenize(tools, hashes) })
	var blocks []weak.Pointer[posting]
	for _, w := range ws {
		for _, b := range w.blocks {
			blocks = append(blocks, weak.Make(&b[:1][0]))
		}
	}
	ix := assemble(snap, DefaultParams, ws, hashes)
	runtime.GC()
	for i, b := range blocks {
		if b.Value() != nil {
			t.Errorf("block %d of %d of the build's records is still live after a collection", i+1, len(blocks))
		}
	}
	runtime.KeepAlive(ix)
}

// TestIndexTablesFit checks that the tables an index keeps, and the process-wide stem
// cache a cold build fills, have no more room than their entries need: the hash tables
// are the smallest that keep them at most 70% full (see tableSize), and the term texts
// and cached stems are slices without spare capacity. A build sizes its tables from
// estimates made before it knows how many terms there are; at 10,000 tools the
// estimates doubled the term table and the stem cache's.
func TestIndexTablesFit(t *testing.T) {
	resetCaches()
	defer resetCaches()
	snap, _ := scaleCatalog(t, 10000)
	ix := NewIndex(snap)
	cache := published.Load()
	for _, c := range []struct {
		name string
		t    *termTable
	}{{"term table", ix.terms}, {"surface-form table", ix.surfaces}, {"stem cache's table", cache.words}} {
		if want := tableSize(c.t.n); len(c.t.slots) != want {
			t.Errorf("the %s has %d slots for %d entries; %d would do", c.name, len(c.t.slots), c.t.n, want)
		}
	}
	if len(ix.termText) != cap(ix.termText) {
		t.Errorf("the term texts take room for %d, not %d", cap(ix.termText), len(ix.termText))
	}
	if len(cache.stems) != cap(cache.stems) {
		t.Errorf("the stem cache takes room for %d stems, not %d", cap(cache.stems), len(cache.stems))
	}
}

// TestIndexHeapBudget checks what an index of the 10,000-tool scale catalog keeps
// alive: its postings, a tool number and a score each, and at most 1 MiB besides (the
// term and surface-form tables, the exact names, the term texts and statistics: 0.86
// MiB). It kept 5.1 MiB more: the build's per-tool records pooled for the next build,
// tables sized by estimates twice the need, and the exact names in a hash table.
func TestIndexHeapBudget(t *testing.T) {
	snap, _ := scaleCatalog(t, 10000)
	var kept []int64
	postings := 0
	for range 3 { // the median: another test's goroutine may still allocate
		kept = append(kept, keptBytes(func() any {
			ix := NewIndex(snap)
			postings = len(ix.postDoc)
			return ix
		}))
	}
	slices.Sort(kept)
	t.Logf("the index keeps %.2f MiB (%.2f and %.2f in the other two builds), %d postings", mib(kept[1]), mib(kept[0]), mib(kept[2]), postings)
	if besides := kept[1] - 8*int64(postings); besides > 1<<20 {
		t.Errorf("the index keeps %.2f MiB: %.2f MiB besides its %d postings, where 1 MiB should do", mib(kept[1]), mib(besides), postings)
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// keptBytes returns the live heap that what build returns keeps: the live heap after a
// collection with it, less the live heap after another once it is dropped. Anything
// else the build leaves live that the second collection frees (buffers pooled for a
// later build, say) counts too; what outlives it, such as the process-wide stem cache,
// does not.
func keptBytes(build func() any) int64 {
	v := build()
	alive := liveHeap()
	runtime.KeepAlive(v)
	return alive - liveHeap()
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
