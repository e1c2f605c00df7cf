package gateway_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/scale"
	"github.com/toolshed/toolshed/policy"
)

// TestCatalogStartOneAssembly checks that catalog servers coming up make one catalog,
// not one per server: every assembly rebuilds the whole catalog, and at 10,000 tools the
// partial ones cost half a second of the start.
func TestCatalogStartOneAssembly(t *testing.T) {
	real, err := scale.Real("../bench")
	if err != nil {
		t.Fatal(err)
	}
	sources := scale.Catalog(real, 3000)
	g, err := gateway.New(&config.Config{}, gateway.Options{Catalogs: sources, Mode: policy.On, Log: discard{}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var assembled []int
	g.OnEvent(func(e gateway.Event) {
		if e.Assembled != nil {
			mu.Lock()
			assembled = append(assembled, e.Assembled.Tools)
			mu.Unlock()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		g.Run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	readyCtx, cancelReady := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelReady()
	g.WaitReady(readyCtx)
	if got := g.Catalog().Len(); got != 3000 {
		t.Fatalf("the catalog has %d tools once ready, want 3000", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(assembled) != 1 || assembled[0] != 3000 {
		t.Errorf("%d servers made %d catalogs of %v tools, want one of 3000", len(sources), len(assembled), assembled)
	}
}
