package searchlog

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestQueueSmallerThanBatch: a Log whose QueueSize is below its BatchSize (a library
// user bounding memory, BatchSize left at its default) drops no record while its
// writer is idle: records are dropped only when the writer falls behind. The queue
// gathers a batch, so it must hold at least one.
func TestQueueSmallerThanBatch(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			l := open(t, b.dsn(t), Options{QueueSize: 10, FlushInterval: time.Hour})
			// Fewer than a batch (DefaultBatchSize): the writer has nothing to write yet.
			searchesAllKept(t, l, 100)
		})
	}
}

// searchesAllKept records n searches on l at once, and checks that none was dropped and
// that Flush writes them all.
func searchesAllKept(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := range n {
		l.Search(Search{Source: "library", Query: fmt.Sprint("q", i), Mode: "bm25"})
	}
	if d := l.Dropped(); d != 0 {
		t.Errorf("%d of %d records dropped", d, n)
	}
	flush(t, l)
	if got, _ := read(t, l); len(got) != n {
		t.Errorf("after Flush: %d searches written, want %d", len(got), n)
	}
}

// TestQueueOfOneBatch: a queue the size of a batch, filled faster than the writer
// wakes, keeps what comes between the batch filling and the writer taking it.
func TestQueueOfOneBatch(t *testing.T) {
	l := open(t, "file:"+filepath.Join(t.TempDir(), "log.db"), Options{QueueSize: 10, BatchSize: 10, FlushInterval: time.Hour})
	// A batch, then fewer than another before the writer can take the first.
	searchesAllKept(t, l, 19)
}

// TestFlushWritesWhatCameBefore: Flush, called by many goroutines while others record,
// writes every record its caller queued before it, whether the writer took them in a
// full batch, at a flush, or for another caller's Flush; and nothing is written twice.
func TestFlushWritesWhatCameBefore(t *testing.T) {
	l := open(t, "file:"+filepath.Join(t.TempDir(), "log.db"), Options{BatchSize: 7, QueueSize: 1 << 16, FlushInterval: 3 * time.Millisecond})
	const workers, rounds, per = 4, 10, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				for i := range per {
					l.Call(Call{Source: "gateway", Tool: fmt.Sprintf("w%d", w), Server: fmt.Sprintf("r%d", r), Outcome: fmt.Sprint(i)})
				}
				if err := l.Flush(context.Background()); err != nil {
					errs <- err
					return
				}
				_, calls, err := l.Read(context.Background(), time.Time{})
				if err != nil {
					errs <- err
					return
				}
				n := 0
				for _, c := range calls {
					if c.Tool == fmt.Sprintf("w%d", w) && c.Server == fmt.Sprintf("r%d", r) {
						n++
					}
				}
				if n != per {
					errs <- fmt.Errorf("worker %d round %d: %d of its %d calls written after its Flush", w, r, n, per)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, calls := read(t, l); len(calls) != workers*rounds*per || l.Dropped() != 0 {
		t.Errorf("%d calls written, %d dropped; want %d and none", len(calls), l.Dropped(), workers*rounds*per)
	}
}
