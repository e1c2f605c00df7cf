package searchlog

import (
	"fmt"
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
			const n = 100 // fewer than a batch (DefaultBatchSize): the writer has nothing to write yet
			for i := range n {
				l.Search(Search{Source: "library", Query: fmt.Sprint("q", i), Mode: "bm25"})
			}
			if d := l.Dropped(); d != 0 {
				t.Errorf("%d of %d records dropped with the writer idle", d, n)
			}
			flush(t, l)
			if got, _ := read(t, l); len(got) != n {
				t.Errorf("after Flush: %d searches written, want %d", len(got), n)
			}
		})
	}
}
