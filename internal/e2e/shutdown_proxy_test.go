//go:build e2e && linux

package e2e

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/fakellm"
)

// How toolshed proxy stops on SIGTERM: it stops accepting, lets the requests in flight
// finish within the drain timeout, and a second signal exits at once. The model is
// fakellm's Messages API, held until the test lets it answer.

// heldModel is the scripted model behind a gate: each request waits until release.
type heldModel struct {
	arrived     chan struct{} // closed when the first request arrives
	release     chan struct{}
	once        sync.Once
	releaseOnce sync.Once
	model       *fakellm.Anthropic
}

// let lets the requests waiting, and those to come, through to the model.
func (m *heldModel) let() { m.releaseOnce.Do(func() { close(m.release) }) }

func startHeldModel(t *testing.T, replies ...fakellm.Reply) (*heldModel, string) {
	t.Helper()
	m := &heldModel{arrived: make(chan struct{}), release: make(chan struct{}), model: fakellm.NewAnthropic(replies...)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.once.Do(func() { close(m.arrived) })
		select {
		case <-m.release:
		case <-r.Context().Done():
			return
		}
		m.model.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(m.let)
	return m, srv.URL
}

// proxyReply is how a client's request through the proxy ended.
type proxyReply struct {
	status int
	body   string
	err    error
}

// startProxyRequest sends a Messages API request to the proxy at base, in the
// background.
func startProxyRequest(base string) <-chan proxyReply {
	out := make(chan proxyReply, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hello"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- proxyReply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		out <- proxyReply{status: resp.StatusCode, body: string(b), err: err}
	}()
	return out
}

// proxyInFlight runs toolshed proxy with the given drain timeout in front of a held
// model that will answer reply, and returns once a client's request has reached the
// model.
func proxyInFlight(t *testing.T, reply, drain string) (p *signalledProc, base string, model *heldModel, replies <-chan proxyReply) {
	t.Helper()
	model, upstreamURL := startHeldModel(t, fakellm.Say(reply))
	p, base = startSignalledProxy(t, upstreamURL, drain)
	replies = startProxyRequest(base)
	select {
	case <-model.arrived:
	case <-time.After(time.Minute):
		t.Fatal("the request never reached the model")
	}
	return p, base, model, replies
}

// startSignalledProxy runs toolshed proxy in front of the model at upstreamURL with the
// given drain timeout, and returns it with its base URL.
func startSignalledProxy(t *testing.T, upstreamURL, drain string) (*signalledProc, string) {
	t.Helper()
	p := startSignalled(t, false, []string{"ANTHROPIC_API_KEY=upstream-key-e2e", "TOOLSHED_TOKEN="},
		"proxy", "--listen", "127.0.0.1:0", "--upstream-url", upstreamURL, "--drain-timeout", drain)
	base := p.waitStderr(t, regexp.MustCompile(`with tool search at (http://\S+)/v1/messages`), 2*time.Minute)[1]
	return p, base
}

// SIGTERM with a request in flight: the proxy stops accepting connections at once,
// lets the request finish, and then exits 0.
func TestProxySIGTERMFinishesRequestsInFlight(t *testing.T) {
	p, base, model, reply := proxyInFlight(t, "finished after the signal", "30s")
	p.signal(t, syscall.SIGTERM)
	// Stopped accepting: a new connection is refused (the listener is closed).
	addr := strings.TrimPrefix(base, "http://")
	deadline := time.Now().Add(stopBound)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the proxy still accepts connections %v after SIGTERM", stopBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case r := <-reply:
		t.Fatalf("the request in flight ended before the model answered: %+v", r)
	case <-p.exited:
		t.Fatalf("the proxy exited (status %d) with a request in flight", p.code)
	case <-time.After(500 * time.Millisecond):
	}
	model.let()
	select {
	case r := <-reply:
		if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, "finished after the signal") {
			t.Errorf("the request in flight did not finish: status %d, error %v, body %s", r.status, r.err, r.body)
		}
	case <-time.After(stopBound):
		t.Fatal("the request in flight got no answer")
	}
	if code := p.waitExit(t, stopBound); code != 0 {
		t.Errorf("exit status %d after a clean stop, want 0", code)
	}
}

// A second SIGTERM while a request is in flight exits at once, with status 143, however
// long the drain timeout.
func TestProxySecondSignalExitsAtOnce(t *testing.T) {
	p, _, _, reply := proxyInFlight(t, "never sent", "120s")
	p.signal(t, syscall.SIGTERM)
	p.waitStderr(t, regexp.MustCompile(`signal again`), stopBound)
	sent := p.signal(t, syscall.SIGTERM)
	code := p.waitExit(t, stopBound)
	t.Logf("exited with status %d, %v after the second SIGTERM", code, p.at.Sub(sent).Round(time.Millisecond))
	if code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit status %d after a second SIGTERM, want %d", code, 128+int(syscall.SIGTERM))
	}
	if r := <-reply; r.err == nil && r.status == http.StatusOK {
		t.Errorf("the request in flight was answered although the model never was: %+v", r)
	}
}

// A request still running at the drain timeout is cut: the proxy answers it 529
// overloaded_error, which clients retry, rather than closing its connection with no
// answer, and exits 1 (the model, held, never answers).
func TestProxyDrainTimeoutCutsRequests(t *testing.T) {
	p, _, _, reply := proxyInFlight(t, "never sent", "1s")
	sent := p.signal(t, syscall.SIGTERM)
	select {
	case r := <-reply:
		t.Fatalf("the request in flight ended before the drain timeout: %+v", r)
	case <-time.After(500 * time.Millisecond):
	}
	code := p.waitExit(t, stopBound)
	t.Logf("exited with status %d, %v after SIGTERM", code, p.at.Sub(sent).Round(time.Millisecond))
	if code != 1 {
		t.Errorf("exit status %d after cutting a request at the drain timeout, want 1", code)
	}
	if !strings.Contains(p.stderr.String(), "still running after the drain timeout") {
		t.Errorf("stderr does not say requests were cut:\n%s", p.stderr)
	}
	if r := <-reply; r.err != nil || r.status != 529 || !strings.Contains(r.body, "overloaded_error") {
		t.Errorf("the request cut at the drain timeout: %+v, want a 529 overloaded_error answer", r)
	}
}
