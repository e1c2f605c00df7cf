package memlimit_test

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/memlimit"
)

const mib = 1 << 20

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		target, live, beside uint64
		want                 int64
	}{
		{"off", 0, 10 * mib, 5 * mib, math.MaxInt64},
		{"a small heap: the target", 80 * mib, 10 * mib, 5 * mib, 80 * mib},
		{"10,000 tools: the target", 80 * mib, 45 * mib, 13 * mib, 80 * mib},
		{"room of exactly a quarter", 80 * mib, 60 * mib, 5 * mib, 80 * mib},
		{"less room than a quarter: no limit", 80 * mib, 61 * mib, 5 * mib, math.MaxInt64},
		{"more live data than the target: no limit", 80 * mib, 200 * mib, 20 * mib, math.MaxInt64},
		{"stacks count", 80 * mib, 40 * mib, 40 * mib, math.MaxInt64},
	} {
		if got := memlimit.Limit(tc.target, tc.live, tc.beside); got != tc.want {
			t.Errorf("%s: Limit(%d MiB, %d MiB live, %d MiB beside) = %d, want %d", tc.name, tc.target/mib, tc.live/mib, tc.beside/mib, got, tc.want)
		}
	}
}

// waitLimit waits for the runtime's memory limit to become want, collecting so that
// the tuner runs.
func waitLimit(t *testing.T, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for got := debug.SetMemoryLimit(-1); got != want; got = debug.SetMemoryLimit(-1) {
		if time.Now().After(deadline) {
			t.Fatalf("the memory limit is %d, want %d", got, want)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// Start holds the limit at the target while the live heap is small, lifts it when the
// live heap leaves the collector less than a quarter of it as room, sets it again when
// the heap is small again, and lifts it when its context ends. The runtime's limit is
// the process's: these tests do not run in parallel.
func TestStart(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	defer debug.SetMemoryLimit(math.MaxInt64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	target := ms.HeapAlloc + 256*mib
	if !memlimit.Start(ctx, target) {
		t.Fatal("Start did nothing")
	}
	waitLimit(t, int64(target))

	live := make([]byte, 240*mib) // live + a quarter passes the target
	for i := range live {
		live[i] = 1
	}
	waitLimit(t, math.MaxInt64)
	runtime.KeepAlive(live)
	live = nil
	waitLimit(t, int64(target))

	cancel()
	waitLimit(t, math.MaxInt64)
}

// The user's GOMEMLIMIT or GOGC rules: Start leaves the runtime alone.
func TestStartLeavesTheUsersSetting(t *testing.T) {
	for _, env := range []string{"GOMEMLIMIT", "GOGC"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "200")
			before := debug.SetMemoryLimit(-1)
			if memlimit.Start(context.Background(), 64*mib) {
				t.Errorf("Start ran with %s set", env)
			}
			if got := debug.SetMemoryLimit(-1); got != before {
				t.Errorf("the limit changed from %d to %d", before, got)
			}
		})
	}
	if memlimit.Start(context.Background(), 0) {
		t.Error("Start ran with a target of 0")
	}
}
