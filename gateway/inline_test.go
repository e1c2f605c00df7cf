package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// A POST whose one request is a tools/call is served on the POST's own goroutine
// (serveInline). A call that asks the client for sampling while it runs cannot end
// until the client answers, and the client can answer only what it was sent: the
// request must reach the POST's stream at once, not when the call ends. primeDelay is an
// hour, so that the stream starts because of the request alone.
func TestHTTPInlineCallSendsItsRequestAtOnce(t *testing.T) {
	defer gateway.SetPrimeDelay(time.Hour)()
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	session := ""
	post := rawSessionWith(t, endpoint, `{"sampling":{}}`, &session)
	untilFastPath(t, post)

	served := gateway.FastCallsServed()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // else the headers never come
	defer cancel()
	resp := post(ctx, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"alpha__sample","arguments":{}}}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	events := sseEvents(resp.Body)
	var asked string
	for asked == "" {
		ev := nextEvent(t, events) // the priming event, then the sampling request
		if strings.Contains(ev, `"method":"sampling/createMessage"`) {
			asked = ev
		}
	}
	id := regexp.MustCompile(`"id":("[^"]*"|\d+)`).FindStringSubmatch(asked)
	if id == nil {
		t.Fatalf("a sampling request without an id: %s", asked)
	}
	answer := post(context.Background(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"model":"inline-model","role":"assistant","content":{"type":"text","text":"hi"}}}`, id[1]))
	answer.Body.Close()
	if answer.StatusCode != http.StatusAccepted {
		t.Fatalf("the client's answer got %d, want 202", answer.StatusCode)
	}
	result := nextEvent(t, events)
	if !strings.Contains(result, `"id":5,"result"`) || !strings.Contains(result, "model inline-model said: hi") {
		t.Errorf("the call's answer is %s", result)
	}
	if ev, ok := <-events; ok {
		t.Errorf("an event after the answer: %s", ev)
	}
	if gateway.FastCallsServed() == served {
		t.Error("the call did not take the fast path: this test proves nothing of it")
	}
}

// A call answered at once is one application/json response, as before, and the fast
// path served it.
func TestHTTPInlineCallAnsweredAsJSON(t *testing.T) {
	defer gateway.SetPrimeDelay(time.Minute)()
	_, _, post := basicHTTPSession(t)
	for i := range 3 { // the same session, one call after another
		served := gateway.FastCallsServed()
		resp := post(context.Background(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi %d"}}}`, 10+i, i))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"hi %d"}]}}`, 10+i, i)
		if string(body) != want {
			t.Errorf("the answer is\n%s\nwant\n%s", body, want)
		}
		if gateway.FastCallsServed() == served {
			t.Error("the call did not take the fast path")
		}
	}
}
