package gateway_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/scale"
	"github.com/toolshed/toolshed/policy"
)

// BenchmarkCatalogStart measures a gateway serving a catalog of real tools (as
// `serve --catalog` does, tool search on) from its start until every catalog upstream
// is in the catalog: the allocations of the whole start (-benchmem) and the heap it
// keeps once ready (retained-MiB, after a GC). bench/load -mode tools measures the same
// start of the real binary at 10,000 tools.
func BenchmarkCatalogStart(b *testing.B) {
	real, err := scale.Real("../bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{2000, 10000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) { benchmarkCatalogStart(b, scale.Catalog(real, n), n) })
	}
}

func benchmarkCatalogStart(b *testing.B, sources []catalog.Source, n int) {
	b.ReportAllocs()
	var retained uint64
	for b.Loop() {
		g, err := gateway.New(&config.Config{}, gateway.Options{Catalogs: sources, Mode: policy.On, Log: discard{}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			g.Run(ctx)
			close(done)
		}()
		readyCtx, cancelReady := context.WithTimeout(ctx, 2*time.Minute)
		g.WaitReady(readyCtx)
		cancelReady()
		if got := g.Catalog().Len(); got != n {
			b.Fatalf("the catalog has %d tools once ready, want %d", got, n)
		}
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		retained = ms.HeapInuse
		b.StartTimer()
		cancel()
		<-done
	}
	b.ReportMetric(float64(retained)/(1<<20), "retained-MiB")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
