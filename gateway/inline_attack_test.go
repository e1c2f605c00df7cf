package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// The tests of this file attack the POST served on its own goroutine (serveInline)
// and the stdio call run by the goroutine that read it (lineConn.handOff): a call that
// never answers, ended from elsewhere (another POST, a DELETE, the gateway stopping, a
// cancellation on the same stdio line or the next), must end its POST or its line
// without taking the session's other calls with it.

// inlineHang starts a call of alpha__hang (which answers only when cancelled) in a POST
// of its own, on the fast path, and returns its response once it comes. primeDelay
// is an hour: no stream writer starts, the POST's goroutine serves the call itself.
func inlineHang(t *testing.T, h *harness, post func(context.Context, string) *http.Response, id int) <-chan *http.Response {
	t.Helper()
	before := gateway.FastCallsServed()
	out := make(chan *http.Response, 1)
	go func() {
		out <- post(context.Background(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`, id))
	}()
	waitFor(t, "the call to run upstream", func() bool { return h.g.CallsRunning() > 0 })
	if gateway.FastCallsServed() == before {
		t.Fatal("the call did not take the fast path: this test proves nothing of it")
	}
	return out
}

// responseWithin waits for a POST's response and reads its body, failing the test when
// it does not come within 30 s.
func responseWithin(t *testing.T, what string, out <-chan *http.Response) (*http.Response, string) {
	t.Helper()
	select {
	case resp := <-out:
		return resp, bodyWithin(t, what, resp)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no response within 30s", what)
	}
	return nil, ""
}

// httpSession serves a gateway in front of alpha over HTTP and opens a raw session.
func httpSession(t *testing.T) (*harness, string, *string, func(context.Context, string) *http.Response) {
	t.Helper()
	return httpSessionWith(t, gateway.HTTPOptions{})
}

// httpSessionWith is httpSession with the front's options.
func httpSessionWith(t *testing.T, opts gateway.HTTPOptions) (*harness, string, *string, func(context.Context, string) *http.Response) {
	t.Helper()
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, opts) + "/mcp"
	session := new(string)
	post := rawSessionID(t, endpoint, session)
	untilFastPath(t, post)
	return h, endpoint, session, post
}

// untilFastPath calls alpha__echo on a raw session until the fast path serves it: it
// does once the session is joined and its upstreams settled (a client that samples
// changes what the upstreams are told, and they settle again).
func untilFastPath(t *testing.T, post func(context.Context, string) *http.Response) {
	t.Helper()
	waitFor(t, "the fast path to serve the session", func() bool {
		served := gateway.FastCallsServed()
		resp := post(context.Background(), `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"warm"}}}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return gateway.FastCallsServed() > served
	})
}

// A call cancelled in another POST: its POST ends without its answer (MCP says not to
// send one), and the session serves its next call as before.
func TestHTTPInlineCallCancelledFromAnotherPOST(t *testing.T) {
	defer gateway.SetPrimeDelay(time.Hour)()
	h, _, _, post := httpSession(t)
	out := inlineHang(t, h, post, 5)
	cancel := post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"enough"}}`)
	cancel.Body.Close()
	if cancel.StatusCode != http.StatusAccepted {
		t.Fatalf("the cancellation got %d, want 202", cancel.StatusCode)
	}
	resp, body := responseWithin(t, "the cancelled call's POST", out)
	if strings.Contains(body, `"id":5`) {
		t.Errorf("the cancelled call was answered (%d, %s): %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	next := post(context.Background(), `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"after"}}}`)
	if b := bodyWithin(t, "the next call", next); !strings.Contains(b, `"id":6,"result":{"content":[{"type":"text","text":"after"}]}`) {
		t.Errorf("the next call got %s", b)
	}
}

// A session deleted while a call runs on its POST's goroutine: the POST ends.
func TestHTTPInlineCallSessionDeleted(t *testing.T) {
	defer gateway.SetPrimeDelay(time.Hour)()
	h, endpoint, session, post := httpSession(t)
	out := inlineHang(t, h, post, 5)
	req, _ := http.NewRequest(http.MethodDelete, endpoint, nil)
	req.Header.Set("Mcp-Session-Id", *session)
	del, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	del.Body.Close()
	if del.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE got %d, want 204", del.StatusCode)
	}
	resp, body := responseWithin(t, "the POST of a call in a deleted session", out)
	if strings.Contains(body, `"result"`) {
		t.Errorf("a call of a deleted session got a result (%d): %s", resp.StatusCode, body)
	}
}

// The gateway stopping while a call runs on its POST's goroutine: the POST ends, with
// the call's answer saying why, and the gateway stops (startGateway's cleanup fails
// the test when it does not within 10 s). Under -race it also holds the call's cancel
// function, set as the call starts, to what the stop reads (callRegistry.cancelFor).
func TestHTTPInlineCallGatewayStops(t *testing.T) {
	defer gateway.SetPrimeDelay(time.Hour)()
	h, _, _, post := httpSession(t)
	out := inlineHang(t, h, post, 5)
	h.stop()
	resp, body := responseWithin(t, "the POST of a call as the gateway stops", out)
	if !strings.Contains(body, `"id":5,"result"`) || !strings.Contains(body, "shutting down") {
		t.Errorf("as the gateway stops, the call's POST got %d %s: %q, want its error saying why", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// Several calls at once on one stdio connection, one of them cancelled on the next
// line: the others are answered, the cancelled one is not, and the connection reads on.
func TestStdioCallsAtOnceOneCancelled(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	s := newLineSessionVersion(t, h, "2025-03-26") // a version with batches
	before := gateway.FastCallsServed()
	s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`)
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`)
	s.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"four"}}}`)
	got := strings.Join(s.until(t, "4"), "")
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	// A batch whose call is cancelled in the same line: its array would hold only
	// that call's answer, and so is not written.
	s.send(t, `[{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}]`)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	s.send(t, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"six"}}}`)
	got += strings.Join(s.until(t, "6"), "")
	// A ping answered after everything before it was read: the cancelled calls'
	// answers, had they been written, came first.
	waitFor(t, "the cancelled calls to end", func() bool { return h.g.CallsRunning() == 0 })
	s.send(t, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	got += strings.Join(s.until(t, "7"), "")
	for _, id := range []string{`"id":2`, `"id":3`, `"id":5`} {
		if strings.Contains(got, id) {
			t.Errorf("a cancelled call was answered (%s):\n%s", id, got)
		}
	}
	if !strings.Contains(got, `"text":"four"`) || !strings.Contains(got, `"text":"six"`) {
		t.Errorf("the calls not cancelled are not both answered:\n%s", got)
	}
	if served := gateway.FastCallsServed() - before; served < 5 {
		t.Errorf("the fast path served %d calls, want 5: this test proves nothing of it", served)
	}
}

// A client that goes away while its call runs on its POST's goroutine, and never comes
// back: as when the call runs elsewhere (the SDK's path, a batch), its POST is over
// for the session once its stream's writer has lost the client, so the session's idle
// timeout ends the session, and the call with it. Otherwise the session lives as long
// as the call, however long the call's timeout (2 minutes by default, here the test's
// whole time).
func TestHTTPInlineCallClientGoneSessionIdles(t *testing.T) {
	defer gateway.SetPrimeDelay(10 * time.Millisecond)()
	h, _, _, post := httpSessionWith(t, gateway.HTTPOptions{IdleTimeout: 500 * time.Millisecond})
	before := gateway.FastCallsServed()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := post(ctx, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`)
	events := sseEvents(resp.Body)
	if prime := nextEvent(t, events); !primeID.MatchString(prime) {
		t.Fatalf("the call's stream starts with %q, want its priming event", prime)
	}
	if gateway.FastCallsServed() == before || h.g.CallsRunning() == 0 {
		t.Fatal("the call does not run on the fast path: this test proves nothing of it")
	}
	cancel() // the client goes
	resp.Body.Close()
	waitFor(t, "the idle session to end, and its call with it", func() bool { return h.g.CallsRunning() == 0 })
}

// A call that reports progress, served on its POST's goroutine with primeDelay an
// hour: the first progress starts the stream (the priming event first), every
// progress comes before the answer, in order, and nothing comes after it.
func TestHTTPInlineCallProgressBeforeAnswer(t *testing.T) {
	defer gateway.SetPrimeDelay(time.Hour)()
	_, _, _, post := httpSession(t)
	before := gateway.FastCallsServed()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp := post(ctx, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":4}}}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	var got []string
	for ev := range sseEvents(resp.Body) {
		got = append(got, ev)
	}
	if len(got) != 6 || !primeID.MatchString(got[0]) || !strings.Contains(got[5], `"id":5,"result":{"content":[{"type":"text","text":"done 4 steps"}]}`) {
		t.Fatalf("the call's stream is %d events, want the priming event, 4 progress and the answer:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i, ev := range got[1:5] {
		if !strings.Contains(ev, "notifications/progress") || !strings.Contains(ev, fmt.Sprintf(`"progress":%d`, i+1)) {
			t.Errorf("event %d is %s, want progress %d", i+1, ev, i+1)
		}
	}
	if gateway.FastCallsServed() == before {
		t.Error("the call did not take the fast path: this test proves nothing of it")
	}
}

// A stdio client that closes its input while calls run on the goroutines that read
// them (one of them parked as the spare reader before): once the drain time given to
// what it asked before it closed runs out, the calls end, and so do the connection's
// goroutines.
func TestStdioClientGoneMidCall(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off, DrainTimeout: 500 * time.Millisecond})
	base := runtime.NumGoroutine()
	s := newLineSession(t, h)
	before := gateway.FastCallsServed()
	s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"}}}`)
	s.until(t, "2") // its goroutine parks as the spare reader
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`)
	s.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`)
	waitFor(t, "both calls to run upstream", func() bool { return h.g.CallsRunning() == 2 })
	if served := gateway.FastCallsServed() - before; served != 3 {
		t.Fatalf("the fast path served %d calls, want 3: this test proves nothing of it", served)
	}
	go io.Copy(io.Discard, s.out) // whatever comes, the client no longer reads it
	s.in.Close()
	waitFor(t, "the calls to end", func() bool { return h.g.CallsRunning() == 0 })
	waitFor(t, "the connection's goroutines to end", func() bool { return runtime.NumGoroutine() <= base+5 })
}
