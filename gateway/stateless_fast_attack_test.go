package gateway_test

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// hangUp sends one POST of body to endpoint and hangs up at once, without reading
// anything: a client that leaves before its call has even started.
func hangUp(t *testing.T, endpoint, body string) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", u.Path, u.Host, len(body), body)
	conn.Close()
}

// A stateless client that hangs up as soon as it has sent a call, before the gateway
// registered it (its arguments take a while to check), has the call cancelled all the
// same, on the fast path and the SDK's: the call does not run on, with the POST's
// session and goroutines, until the upstream answers or the call timeout (120 s)
// ends it. Before the fix 36 of 40 calls (fast path) and 40 of 40 (SDK's path) still
// ran 30 s later.
func TestStatelessClientGoneBeforeCallStarts(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast", false: "sdk"}[fast], func(t *testing.T) {
			defer gateway.SetFastCalls(fast)()
			activity := filepath.Join(t.TempDir(), "activity.jsonl")
			cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}, Hooks: config.Hooks{ActivityLog: activity}}
			h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
			endpoint := serveHTTP(t, h, gateway.HTTPOptions{Stateless: true}) + "/mcp"
			served := gateway.FastCallsServed()
			pad := `[` + strings.Repeat(`1.5,`, 500_000) + `0]`
			const n = 40
			for i := range n {
				hangUp(t, endpoint, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__hang","arguments":{"pad":%s}}}`, i, pad))
			}
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				data, _ := os.ReadFile(activity)
				cancelled := strings.Count(string(data), `"outcome":"cancelled"`)
				_, stateless := h.g.ClientCounts()
				running := h.g.CallsRunning()
				if cancelled == n && stateless == 0 && running == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("60s after %d stateless clients hung up on their calls: %d calls cancelled, %d stateless sessions alive, %d calls running upstream", n, cancelled, stateless, running)
				}
			}
			if got := gateway.FastCallsServed() - served; fast && got != n || !fast && got != 0 {
				t.Errorf("the fast path served %d of the %d calls", got, n)
			}
		})
	}
}
