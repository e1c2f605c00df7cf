package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/tokens"
)

// directClient starts the test upstream as its own process and connects to it directly.
func directClient(tb testing.TB, mode string) *mcp.ClientSession {
	cmd, args, env := upstreamCommand(mode)
	c := exec.Command(cmd, args...)
	testupstream.Own(tb, c)
	c.Env = os.Environ()
	for k, v := range env {
		c.Env = append(c.Env, k+"="+v)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: c}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// pipeClient connects a client to the gateway over a pair of OS pipes, the way a client
// that started toolshed talks to it over stdio.
func pipeClient(tb testing.TB, g *gateway.Gateway, profile string) *mcp.ClientSession {
	toGateway, fromClient, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	toClient, fromGateway, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := g.Connect(context.Background(), &mcp.IOTransport{Reader: toGateway, Writer: fromGateway}, profile); err != nil {
		tb.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: toClient, Writer: fromClient}, sessionOptions(""))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// loopbackClient connects a client of protocol version ("": a 2025-11-25 session,
// sdkDefault: the SDK's choice, 2026-07-28) to the gateway's Streamable HTTP front on a
// loopback socket.
func loopbackClient(tb testing.TB, g *gateway.Gateway, version string) *mcp.ClientSession {
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	tb.Cleanup(srv.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}, sessionOptions(version))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

func benchGateway(b *testing.B, mode policy.Mode) *gateway.Gateway {
	b.Helper()
	return benchGatewayWith(b, gateway.Options{Mode: mode, Log: &testupstream.SyncBuffer{}})
}

// benchGatewayWith runs a gateway with opts in front of the test upstream "alpha",
// until the benchmark ends, and returns it once the upstream is ready.
func benchGatewayWith(b *testing.B, opts gateway.Options) *gateway.Gateway {
	b.Helper()
	g, err := gateway.New(&config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	ready, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	g.WaitReady(ready)
	return g
}

func percentiles(d []time.Duration) (p50, p99 float64) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d) == 0 {
		return 0, 0
	}
	return float64(d[len(d)/2].Nanoseconds()) / 1000, float64(d[len(d)*99/100].Nanoseconds()) / 1000
}

// BenchmarkAddedLatency measures what toolshed adds to a tool call: each iteration calls
// echo once directly on an upstream process and once through toolshed (client and
// toolshed on OS pipes, or over Streamable HTTP on a loopback socket; toolshed and its
// upstream process on stdio), interleaved so both see the same machine. The added
// latency is the difference of the medians. The clients are the SDK's, in the
// benchmark's process; the separate-process figures are bench/gateways'.
func BenchmarkAddedLatency(b *testing.B) {
	for _, tc := range []struct {
		name string
		mode policy.Mode
		tool string
		args func(string) any
		http bool
		// version is the client's protocol version (see loopbackClient); HTTP only.
		version string
	}{
		{"direct-call", policy.Off, "alpha__echo", func(s string) any { return map[string]any{"text": s} }, false, ""},
		{"tool_call", policy.On, "tool_call", func(s string) any {
			return map[string]any{"name": "alpha__echo", "arguments": map[string]any{"text": s}}
		}, false, ""},
		{"http-direct-call", policy.Off, "alpha__echo", func(s string) any { return map[string]any{"text": s} }, true, ""},
		{"http-modern-direct-call", policy.Off, "alpha__echo", func(s string) any { return map[string]any{"text": s} }, true, sdkDefault},
	} {
		b.Run(tc.name, func(b *testing.B) {
			direct := directClient(b, "basic")
			g := benchGateway(b, tc.mode)
			var via *mcp.ClientSession
			if tc.http {
				via = loopbackClient(b, g, tc.version)
			} else {
				via = pipeClient(b, g, "")
			}
			ctx := context.Background()
			for range 50 { // warm up both paths
				direct.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "w"}})
				via.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args("w")})
			}
			var dLat, vLat []time.Duration
			b.ResetTimer()
			for i := range b.N {
				text := fmt.Sprint("call ", i)
				start := time.Now()
				res, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
				dLat = append(dLat, time.Since(start))
				if err != nil || resultText(res) != text {
					b.Fatalf("direct: %v %v", res, err)
				}
				start = time.Now()
				res, err = via.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args(text)})
				vLat = append(vLat, time.Since(start))
				if err != nil || resultText(res) != text {
					b.Fatalf("through toolshed: %v %v", resultText(res), err)
				}
			}
			b.StopTimer()
			d50, d99 := percentiles(dLat)
			v50, v99 := percentiles(vLat)
			b.ReportMetric(d50, "direct-p50-µs")
			b.ReportMetric(d99, "direct-p99-µs")
			b.ReportMetric(v50, "toolshed-p50-µs")
			b.ReportMetric(v99, "toolshed-p99-µs")
			b.ReportMetric(v50-d50, "added-p50-µs")
			b.ReportMetric(v99-d99, "added-p99-µs")
		})
	}
}

// runSessions has sessions clients each make calls calls of echo through toolshed, half
// directly and half by tool_call, and checks that every answer is the one asked for.
func runSessions(tb testing.TB, g *gateway.Gateway, sessions, calls int) error {
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	clients := make([]*mcp.ClientSession, sessions)
	for i := range clients {
		clients[i] = pipeClient(tb, g, "")
	}
	for s, cs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range calls {
				text := fmt.Sprintf("session %d call %d", s, c)
				params := &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": text}}
				if c%2 == 1 {
					params = &mcp.CallToolParams{Name: "tool_call", Arguments: map[string]any{"name": "alpha__echo", "arguments": map[string]any{"text": text}}}
				}
				res, err := cs.CallTool(context.Background(), params)
				if err != nil {
					errs <- fmt.Errorf("session %d call %d: %v", s, c, err)
					return
				}
				if got := resultText(res); res.IsError || got != text {
					errs <- fmt.Errorf("session %d call %d: got %q, want %q", s, c, got, text)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// concurrencyGateway lists alpha__echo directly (pinned) and the bridge, so sessions can
// call it both ways.
func concurrencyConfig() *config.Config {
	s := testServer("alpha", "basic")
	s.Rules = policy.ServerRules{Configs: map[string]policy.ToolConfig{"echo": {DeferLoading: ptr(false)}}}
	return &config.Config{Servers: []config.Server{s}}
}

// TestConcurrentSessions: 50 sessions making 200 calls each get every answer right.
func TestConcurrentSessions(t *testing.T) {
	h := startGateway(t, concurrencyConfig(), gateway.Options{Mode: policy.On})
	if err := runSessions(t, h.g, 50, 200); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkConcurrentSessions reports the throughput and memory of 50 sessions making
// 200 calls each.
func BenchmarkConcurrentSessions(b *testing.B) {
	g, err := gateway.New(concurrencyConfig(), gateway.Options{Mode: policy.On, Log: &testupstream.SyncBuffer{}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	ready, stop := context.WithTimeout(ctx, 30*time.Second)
	g.WaitReady(ready)
	stop()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var peak uint64
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		stopSampling := make(chan struct{})
		go func() {
			for {
				select {
				case <-stopSampling:
					return
				case <-time.After(20 * time.Millisecond):
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak {
						peak = m.HeapInuse
					}
				}
			}
		}()
		if err := runSessions(b, g, 50, 200); err != nil {
			b.Fatal(err)
		}
		close(stopSampling)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*50*200)/time.Since(start).Seconds(), "calls/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(before.HeapInuse)/(1<<20), "idle-heap-MiB")
}

// TestToolsListTokens: on the real catalogs, a client's tools/list through toolshed costs
// at least 90% fewer tokens than the tools/list of every server directly (o200k_base,
// over the tools as the client receives them).
func TestToolsListTokens(t *testing.T) {
	sources, _ := builtin.Sources()
	h := startGateway(t, &config.Config{}, gateway.Options{Catalogs: sources})
	listTokens := func(tools []*mcp.Tool) int {
		n := 0
		for _, tool := range tools {
			b, _ := json.Marshal(tool)
			n += tokens.Count(string(b))
		}
		return n
	}
	var through []*mcp.Tool
	for tool, err := range h.client("", nil).Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		through = append(through, tool)
	}
	// Every server directly: the same catalog with tool search off lists each server's
	// tools as that server does.
	off := startGateway(t, &config.Config{}, gateway.Options{Catalogs: sources, Mode: policy.Off, NoPrefix: true})
	var all []*mcp.Tool
	for tool, err := range off.client("", nil).Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, tool)
	}
	direct, via := listTokens(all), listTokens(through)
	saving := 100 * float64(direct-via) / float64(direct)
	t.Logf("tools/list: %d tools, %d tokens directly; through toolshed %d tools, %d tokens: %.1f%% fewer", len(all), direct, len(through), via, saving)
	if len(all) < 470 || saving < 90 {
		t.Errorf("saving %.1f%% over %d tools, want at least 90%%", saving, len(all))
	}
}
