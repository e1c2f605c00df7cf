package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
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
			served, ended := gateway.FastCallsServed(), gateway.StatelessEnded()
			pad := `[` + strings.Repeat(`1.5,`, 500_000) + `0]`
			const n = 40
			for i := range n {
				hangUp(t, endpoint, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__hang","arguments":{"pad":%s}}}`, i, pad))
			}
			// Every POST's session ends and no call runs on. A call the SDK's path
			// cancels before its handler starts never runs, and leaves no activity
			// record; one that ran was cancelled (alpha__hang answers nothing). On the
			// fast path every call runs, and is cancelled (the log is written behind).
			// Bounded generously: with 40 bodies of 2.5 MB decoded under the race
			// detector beside other test binaries on 2 loaded cores, this subtest took
			// 101 s in a passing CI run, and a run at a heavier load passed the 60 s
			// this wait had.
			var cancelled int
			for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
				data, _ := os.ReadFile(activity)
				cancelled = strings.Count(string(data), `"outcome":"cancelled"`)
				if other := strings.Count(string(data), `"outcome":`) - cancelled; other != 0 {
					t.Fatalf("%d calls of clients that hung up ended otherwise than cancelled:\n%s", other, data)
				}
				_, stateless := h.g.ClientCounts()
				gone, running := gateway.StatelessEnded()-ended, h.g.CallsRunning()
				if gone == n && stateless == 0 && running == 0 && (!fast || cancelled == n) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("4 minutes after %d stateless clients hung up on their calls: %d sessions ended, %d alive, %d calls cancelled, %d running upstream", n, gone, stateless, cancelled, running)
				}
			}
			if got := gateway.FastCallsServed() - served; fast && got != n || !fast && got != 0 {
				t.Errorf("the fast path served %d of the %d calls", got, n)
			}
		})
	}
}

// statelessPost posts body to a stateless endpoint as a client of 2025-11-25 would.
func statelessPost(endpoint string) func(context.Context, string) *http.Response {
	return func(ctx context.Context, body string) *http.Response {
		resp, err := http.DefaultClient.Do(jsonPOST(ctx, endpoint, body, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}))
		if err != nil {
			return &http.Response{StatusCode: 0, Body: io.NopCloser(strings.NewReader(err.Error()))}
		}
		return resp
	}
}

// The gateway stopping while a stateless call runs on the fast path: the POST ends
// with the call's answer saying why, and the gateway stops (startGateway's cleanup
// fails the test when it does not).
func TestStatelessFastCallGatewayStops(t *testing.T) {
	h, endpoint := statelessGateway(t)
	out := inlineHang(t, h, statelessPost(endpoint), 5)
	h.stop()
	resp, body := responseWithin(t, "the POST of a stateless call as the gateway stops", out)
	if !strings.Contains(body, `"id":5,"result"`) || !strings.Contains(body, "shutting down") {
		t.Errorf("as the gateway stops, the stateless call's POST got %d %s: %q, want its error saying why", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// Two stateless clients call with the same request id at once, one of them a call
// that hangs and is left: the other's answer is its own, and the hanging call's
// client leaving cancels only its call.
func TestStatelessFastCallsSameIDApart(t *testing.T) {
	h, endpoint := statelessGateway(t)
	post := statelessPost(endpoint)
	served := gateway.FastCallsServed()
	ctx, leave := context.WithCancel(context.Background())
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		resp := post(ctx, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"alpha__hang","arguments":{}}}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	waitFor(t, "the hanging call to run upstream", func() bool { return h.g.CallsRunning() == 1 })
	for i := range 20 {
		resp := post(context.Background(), fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"alpha__slow","arguments":{"steps":1,"text":"%d"}}}`, i))
		body := bodyWithin(t, "a call beside a hanging one", resp)
		if !strings.Contains(body, `"id":1,"result"`) || strings.Contains(body, "alpha__hang") {
			t.Fatalf("call %d beside a hanging call with the same id: %d %q", i, resp.StatusCode, body)
		}
	}
	if got := gateway.FastCallsServed() - served; got != 21 {
		t.Errorf("the fast path served %d of the 21 calls: this test proves little of it", got)
	}
	if n := h.g.CallsRunning(); n != 1 {
		t.Errorf("%d calls running, want the hanging one", n)
	}
	leave()
	<-gone
	waitFor(t, "the left call to be cancelled", func() bool { _, s := h.g.ClientCounts(); return h.g.CallsRunning() == 0 && s == 0 })
}

// A stateless client of a profile scoped to one tool calls the others, directly and by
// profile path with its token, and a tool the deny hook refuses: each is refused, on
// either path, with the bytes the SDK's path answers.
func TestStatelessFastCallKeepsScopeAndHooks(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Profiles: map[string]config.Profile{"narrow": {Scope: policy.Scope{Tools: []string{"alpha__echo", "alpha__add"}}, Token: "narrow-secret"}},
		Hooks:    config.Hooks{Deny: []string{"alpha__add"}}}
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"in scope"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__args","arguments":{"out":"of scope"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__add","arguments":{"a":1,"b":2}}}`,
	}
	transcript := func(fast bool) (string, int64) {
		defer gateway.SetFastCalls(fast)()
		h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
		base := serveHTTP(t, h, gateway.HTTPOptions{Stateless: true, Token: "admin-secret"})
		served := gateway.FastCallsServed()
		var out strings.Builder
		for _, endpoint := range []string{base + "/mcp", base + "/mcp/narrow"} {
			for _, b := range bodies {
				resp, body := rawPOST(t, context.Background(), endpoint, b, map[string]string{"Authorization": "Bearer narrow-secret", "Mcp-Protocol-Version": "2025-06-18"})
				fmt.Fprintf(&out, "%d %s\n%s\n", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		}
		return out.String(), gateway.FastCallsServed() - served
	}
	fast, n := transcript(true)
	sdk, _ := transcript(false)
	if n == 0 {
		t.Fatal("the fast path served none of the calls: this test proves nothing of it")
	}
	if fast != sdk {
		t.Errorf("the fast path answered\n%s\nthe SDK's\n%s", fast, sdk)
	}
	if strings.Contains(fast, "of scope") || !strings.Contains(fast, "in scope") || strings.Count(fast, `"error":"permission_denied"`) != 2 || strings.Count(fast, `unknown tool \"alpha__args\"`) != 2 {
		t.Errorf("a narrow profile's stateless calls were answered\n%s", fast)
	}
}
