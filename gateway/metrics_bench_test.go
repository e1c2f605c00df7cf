package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/metrics"
	"github.com/toolshed/toolshed/policy"
)

// BenchmarkMetricsCost measures what counting in the metrics adds to a request: two
// gateways in front of the test upstream, one with metrics and one without, each with a
// client on OS pipes; each iteration sends the same request through both, interleaved
// so both see the same machine. It reports each one's median and their difference
// (on-off; noise makes it as often negative as positive when the cost is nil). All in
// the benchmark's process.
func BenchmarkMetricsCost(b *testing.B) {
	for _, tc := range []struct {
		name string
		mode policy.Mode
		tool string
		args any
	}{
		{"call", policy.Off, "alpha__echo", map[string]any{"text": "hi"}},
		{"tool_call", policy.On, "tool_call", map[string]any{"name": "alpha__echo", "arguments": map[string]any{"text": "hi"}}},
		{"search", policy.On, "tool_search", map[string]any{"query": "echo text back"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			off := pipeClient(b, benchGatewayWith(b, gateway.Options{Mode: tc.mode, Log: &testupstream.SyncBuffer{}}), "")
			on := pipeClient(b, benchGatewayWith(b, gateway.Options{Mode: tc.mode, Log: &testupstream.SyncBuffer{}, Metrics: metrics.New(gateway.Version, "")}), "")
			params := &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args}
			run := func(cs *mcp.ClientSession) time.Duration {
				start := time.Now()
				res, err := cs.CallTool(context.Background(), params)
				if err != nil || res.IsError {
					b.Fatalf("%s: %v %+v", tc.tool, err, res)
				}
				return time.Since(start)
			}
			for range 50 { // warm both up
				run(off)
				run(on)
			}
			var dOff, dOn []time.Duration
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					dOff, dOn = append(dOff, run(off)), append(dOn, run(on))
				} else {
					dOn, dOff = append(dOn, run(on)), append(dOff, run(off))
				}
			}
			pOff, _ := percentiles(dOff)
			pOn, _ := percentiles(dOn)
			b.ReportMetric(pOff, "p50-off-us")
			b.ReportMetric(pOn, "p50-on-us")
			b.ReportMetric(pOn-pOff, "added-us")
		})
	}
}
