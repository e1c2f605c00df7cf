package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A client that loses a resumable stream and never resumes it: the session must still
// keep only its last maxReplayStreams (8) streams for resumption, not every stream
// after the lost one forever.
func TestHTTPLostStreamPinsReplayBuffers(t *testing.T) {
	endpoint, session, post := basicHTTPSession(t)
	ctx, cancel := context.WithCancel(context.Background())
	lost := post(ctx, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":4}}}`)
	events := sseEvents(lost.Body)
	nextEvent(t, events) // priming
	cancel()
	lost.Body.Close()
	time.Sleep(time.Second) // the call ends meanwhile, its result queued for no one

	var ids []string
	for i := range 20 {
		resp := post(context.Background(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":{"progressToken":"q%d"},"name":"alpha__slow","arguments":{"steps":1}}}`, 100+i, i))
		b := bodyWithin(t, "a call", resp)
		resp.Body.Close()
		m := primeID.FindStringSubmatch(b)
		if m == nil {
			t.Fatalf("call %d: no priming event in %q", i, b)
		}
		ids = append(ids, m[1])
	}
	// The 20 streams' first ones are no longer kept: resuming one is refused.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	resp := getStream(t, ctx2, endpoint, *session, ids[0]+"_0")
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("resuming the 1st of 20 later streams got %d, want 400: every stream after a lost one is kept for replay, without bound", resp.StatusCode)
	}
}

// A client that lost a call's stream and resumes only after the call ended gets the
// rest of it: the progress it missed and the result.
func TestHTTPResumeAfterCallEnded(t *testing.T) {
	endpoint, session, post := basicHTTPSession(t)
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(ctx, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":4}}}`)
	events := sseEvents(resp.Body)
	prime := nextEvent(t, events)
	m := primeID.FindStringSubmatch(prime)
	if m == nil {
		t.Fatalf("no priming event: %s", prime)
	}
	cancel()
	resp.Body.Close()
	// The call ends meanwhile (4 steps of 50 ms).
	waitFor(t, "the call to end", func() bool {
		r := post(context.Background(), `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"alpha__cancelled","arguments":{}}}`)
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		time.Sleep(300 * time.Millisecond)
		return len(b) > 0
	})
	g := getStream(t, context.Background(), endpoint, *session, m[1]+"_0")
	body := bodyWithin(t, "the resumed stream", g)
	if g.StatusCode != http.StatusOK || strings.Count(body, "notifications/progress") != 4 || !strings.Contains(body, `"id":7,"result":{"content":[{"type":"text","text":"done 4 steps"}]}`) {
		t.Errorf("resumed after the call ended: %d\n%s\nwant 4 progress events and the result", g.StatusCode, body)
	}
}
