//go:build e2e && linux

package e2e

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// How toolshed serve --http drains on SIGTERM, as Kubernetes stops a pod, in front of the
// real npm server-everything (see recordedEverything): /readyz answers 503 at once, a
// new session is refused with 503 and Retry-After, the open session is still served, and
// a call in flight finishes when it fits in the drain timeout, or is cancelled with a
// result that says why when it does not.
//
// The durations are behaviour, not speed: the call that must finish lasts 10 seconds
// against a drain timeout of 2 minutes, the one that must be cancelled a minute against
// 5 seconds.

// getStatus is the status and body of GET url.
func getStatus(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

var (
	regexpDraining   = regexp.MustCompile(`: draining: not ready`)
	regexpCancelling = regexp.MustCompile(`1 calls still running after the drain timeout \(5s, --drain-timeout\): cancelling them`)
)

// waitNotReady waits until GET /readyz answers 503 (the signal reaches toolshed, and
// its drain starts, a moment after it is sent), and returns its body.
func waitNotReady(t *testing.T, base string) string {
	t.Helper()
	deadline := time.Now().Add(stopBound)
	for {
		code, _, body := getStatus(t, base+"/readyz")
		if code == http.StatusServiceUnavailable {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /readyz still answers %d %s %v after SIGTERM", code, body, stopBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkDraining checks, while toolshed drains, that /readyz says so, that a new session
// is refused with 503 and Retry-After, and that the open session c is still served.
func checkDraining(t *testing.T, p *signalledProc, c *httpWire) {
	t.Helper()
	base := strings.TrimSuffix(c.url, "/mcp")
	p.waitStderr(t, regexpDraining, stopBound)
	if body := waitNotReady(t, base); !strings.Contains(body, "draining") {
		t.Errorf("GET /readyz while draining: 503 %s, want it to say draining", body)
	}
	if code, _, body := getStatus(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz while draining: %d %s, want 200: the process is alive", code, body)
	}
	fresh := &httpWire{url: c.url}
	resp := fresh.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "shutting down") {
		t.Errorf("a new initialize while draining: %s (Retry-After %q) %s, want 503 with Retry-After saying toolshed is shutting down", resp.Status, resp.Header.Get("Retry-After"), body)
	}
	if fresh.session != "" {
		t.Errorf("a refused initialize was given session %s", fresh.session)
	}
	// The open session is served: its tools/list is answered.
	if res := c.call(t, "tools/list", `{}`); !bytes.Contains(res, []byte(longTool)) {
		t.Errorf("tools/list of the open session while draining: %s", res)
	}
}

// A call that fits in the drain timeout completes, and toolshed then exits 0 at once
// (it does not wait out the drain timeout: nothing is left in flight).
func TestServeSIGTERMDrainLetsCallFinish(t *testing.T) {
	config, _, marker := recordedEverything(t)
	p, c := startHTTPFront(t, config, "120s", `{}`)
	resp := c.post(t, callMessage("short", longTool, `{"duration":10,"steps":10}`))
	defer resp.Body.Close()
	events := sseMessages(resp.Body)
	expectMessage(t, events, "progress of the call", time.Minute, isProgress)
	p.signal(t, syscall.SIGTERM)
	checkDraining(t, p, c)
	res := expectMessage(t, events, "result of the call", 2*time.Minute, func(b []byte) bool { _, ok := resultOfID(b, `"short"`); return ok })
	if bytes.Contains(res, []byte(`"isError":true`)) || !bytes.Contains(res, []byte("completed")) {
		t.Errorf("the call in flight at SIGTERM did not complete: %s", res)
	}
	if code := p.waitExit(t, time.Minute); code != 0 {
		t.Errorf("exit status %d after a drain that finished every call, want 0", code)
	}
	checkNoMarkedProcesses(t, marker, "after toolshed exited")
}

// A call that outlives the drain timeout is cancelled: its client gets a result that
// says toolshed is shutting down and the drain time ran out, the server is told
// (notifications/cancelled), and toolshed exits 0.
func TestServeSIGTERMDrainCancelsLongCall(t *testing.T) {
	config, stdinLog, marker := recordedEverything(t)
	p, c := startHTTPFront(t, config, "5s", `{}`)
	resp := c.post(t, callMessage("long", longTool, longCallArgs))
	defer resp.Body.Close()
	events := sseMessages(resp.Body)
	expectMessage(t, events, "progress of the long call", time.Minute, isProgress)
	sent := p.signal(t, syscall.SIGTERM)
	base := strings.TrimSuffix(c.url, "/mcp")
	p.waitStderr(t, regexpDraining, stopBound)
	waitNotReady(t, base)
	res := expectMessage(t, events, "result of the long call", stopBound, func(b []byte) bool { _, ok := resultOfID(b, `"long"`); return ok })
	if !bytes.Contains(res, []byte(`"isError":true`)) || !bytes.Contains(res, []byte("shutting down")) || !bytes.Contains(res, []byte("--drain-timeout")) {
		t.Errorf("the call's result does not say it was cancelled because toolshed is shutting down and the drain time ran out: %s", res)
	}
	p.waitStderr(t, regexpCancelling, stopBound)
	checkStopped(t, p, sent, stdinLog, marker, "trigger-long-running-operation")
}
