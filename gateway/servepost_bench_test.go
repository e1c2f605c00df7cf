package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// BenchmarkServePOST measures the front's own work for one direct tool call over
// Streamable HTTP, without a network: each iteration hands a POST to the handler in the
// benchmark's process and reads its answer from a recorder. The upstream is a real
// process on stdio, the same for every case, so the cases differ by what the front
// does: "stateless" is a 2025-11-25 client's POST to serve --stateless, "modern" a
// 2026-07-28 client's enveloped POST (no session) to the ordinary front. Run with
// -cpuprofile to see where a modern call spends more than a stateless one.
func BenchmarkServePOST(b *testing.B) {
	for _, tc := range []struct {
		name      string
		stateless bool
		header    []string
		params    string
	}{
		{"stateless", true, []string{"MCP-Protocol-Version", "2025-11-25"}, `{"name":"alpha__echo","arguments":{"text":%q}}`},
		{"modern", false, []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "alpha__echo"},
			`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},"name":"alpha__echo","arguments":{"text":%q}}`},
	} {
		for _, loopback := range []bool{false, true} {
			name := tc.name
			if loopback {
				name += "/loopback"
			}
			b.Run(name, func(b *testing.B) { benchServePOST(b, tc.stateless, loopback, tc.header, tc.params) })
		}
	}
}

// benchServePOST runs one case of BenchmarkServePOST: POSTs with header and params
// (a format with the echoed text's %q) handed to the handler in process, or sent to it
// over a loopback socket (loopback) by a keep-alive client, so that net/http's own
// reading and writing are in the figures too.
func benchServePOST(b *testing.B, stateless, loopback bool, header []string, params string) {
	g := benchGatewayWith(b, gateway.Options{Mode: policy.Off, Log: &testupstream.SyncBuffer{}})
	h := g.Handler(gateway.HTTPOptions{Stateless: stateless})
	url := "/mcp"
	if loopback {
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		url = srv.URL + "/mcp"
	}
	call := func(i int) {
		text := fmt.Sprint("call ", i)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i, fmt.Sprintf(params, text))
		req := httptest.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for j := 0; j+1 < len(header); j += 2 {
			req.Header.Set(header[j], header[j+1])
		}
		code, answer := 0, ""
		if loopback {
			req.RequestURI = ""
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			code, answer = resp.StatusCode, string(data)
		} else {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			code, answer = rec.Code, rec.Body.String()
		}
		if code != http.StatusOK || !strings.Contains(answer, `"text":"`+text+`"`) {
			b.Fatalf("call %d: HTTP %d: %s", i, code, answer)
		}
	}
	for i := range 200 { // warm up
		call(i)
	}
	b.ReportAllocs()
	created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(created)
	before := created[0].Value.Uint64()
	cpu := processCPU()
	b.ResetTimer()
	for i := range b.N {
		call(i)
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
	metrics.Read(created)
	b.ReportMetric(float64(created[0].Value.Uint64()-before)/float64(b.N), "goroutines/op")
}

// processCPU is the CPU time (user and system) this process has used so far: the
// benchmark's requests and the gateway serving them, not the upstream's process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
