// Package memlimit keeps the memory of toolshed's Go runtime within a target for as
// long as that costs the collector little, with the runtime's own soft memory limit.
//
// Go's collector lets the heap grow to twice its live data before collecting
// (GOGC=100). Most of a gateway's live data is its catalog, built once and kept: at
// 10,000 tools about 45 MB, so the heap grew to about 90 MB and the process to 120–135
// MiB, of which half was room for garbage the requests of one agent never need. A
// memory limit (debug.SetMemoryLimit) makes the collector run sooner instead, as the
// memory used nears the limit. Past some size of live data a fixed limit would make
// it run all the time, so the limit here holds only while the collector keeps at
// least a quarter of the live heap as room (it then collects at most four times as
// often as GOGC=100 would); beyond that, the runtime's defaults rule again, and a
// gateway with more live data (thousands of sessions) is never starved of CPU by it.
//
// GOMEMLIMIT and GOGC in the environment are the user's choice: with either set,
// Start does nothing.
package memlimit

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultTarget is the memory toolshed serve keeps its Go runtime within by default:
// with the binary's own pages (about 20 MiB resident), a process of about 100 MiB.
const DefaultTarget = 80 << 20

// minRoom is the least room for garbage the limit leaves the collector, as a fraction
// of the live heap: a quarter, at most four times the collections of GOGC=100.
const minRoom = 0.25

// Limit returns the soft memory limit for target, given the live heap and the memory
// the runtime uses beside the heap (stacks, its own structures): target while the
// collector keeps at least minRoom of the live heap as room within it, else no limit
// (math.MaxInt64).
func Limit(target, live, beside uint64) int64 {
	if target == 0 || float64(live)*(1+minRoom)+float64(beside) > float64(target) || target > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(target)
}

// Start keeps the runtime's soft memory limit at Limit(target, ...) from now until
// ctx ends, working it out again after every collection, and restores no limit at
// the end. It does nothing, and reports false, when target is 0 or GOMEMLIMIT or GOGC
// is set in the environment.
func Start(ctx context.Context, target uint64) bool {
	if target == 0 || os.Getenv("GOMEMLIMIT") != "" || os.Getenv("GOGC") != "" {
		return false
	}
	t := &tuner{target: target}
	t.update()
	t.arm()
	context.AfterFunc(ctx, func() {
		t.mu.Lock()
		t.done = true
		t.mu.Unlock()
		debug.SetMemoryLimit(math.MaxInt64)
	})
	return true
}

// tuner sets the limit after each collection: a cleanup attached to an object that
// only the collector can free runs once per collection, and attaches itself again.
type tuner struct {
	target  uint64
	mu      sync.Mutex
	done    bool
	limit   int64
	samples []metrics.Sample
}

// sentinel is what the collector frees at each collection; big enough not to be one
// of the small objects the allocator packs together (which would be freed together).
type sentinel struct{ _ [64]byte }

func (t *tuner) arm() {
	runtime.AddCleanup(&sentinel{}, func(t *tuner) {
		t.mu.Lock()
		done := t.done
		t.mu.Unlock()
		if !done {
			t.update()
			t.arm()
		}
	}, t)
}

// sampled are the runtime's figures update reads.
var sampled = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
}

// update sets the limit for the live heap of the last collection.
func (t *tuner) update() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	if t.samples == nil {
		for _, name := range sampled {
			t.samples = append(t.samples, metrics.Sample{Name: name})
		}
	}
	metrics.Read(t.samples)
	v := make([]uint64, len(t.samples))
	for i, s := range t.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	live, total, released, heap := v[0], v[1], v[2], v[3]+v[4]+v[5]
	beside := uint64(0)
	if total > released+heap {
		beside = total - released - heap
	}
	if limit := Limit(t.target, live, beside); limit != t.limit {
		t.limit = limit
		debug.SetMemoryLimit(limit)
	}
}
