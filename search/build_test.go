package search

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"

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
