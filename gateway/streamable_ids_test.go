package gateway_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// Two POSTs of one session with the same request id in flight: the SDK's handler
// refuses the second (400, "duplicate in-flight request ID"); each POST must at least
// end, and neither may carry the other's answer.
func TestHTTPDuplicateInflightID(t *testing.T) {
	_, _, post := basicHTTPSession(t)
	first := post(context.Background(), `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":20}}}`)
	defer first.Body.Close()
	events := sseEvents(first.Body)
	nextEvent(t, events) // priming: the call is running
	second := post(context.Background(), `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"second"}}}`)
	defer second.Body.Close()
	secondBody := make(chan string, 1)
	go func() { b, _ := io.ReadAll(second.Body); secondBody <- string(b) }()

	var firstGot []string
	deadline := time.After(30 * time.Second)
	ended := false
	for !ended {
		select {
		case ev, ok := <-events:
			if !ok {
				ended = true
				break
			}
			firstGot = append(firstGot, ev)
		case <-deadline:
			t.Errorf("the first POST did not end within 30s (it got %d events)", len(firstGot))
			ended = true
		}
	}
	if all := strings.Join(firstGot, "\n"); !strings.Contains(all, `"done 20 steps"`) {
		t.Errorf("the first POST did not get its own result:\n%s", all)
	}
	select {
	case b := <-secondBody:
		if strings.Contains(b, "done 20 steps") {
			t.Errorf("the second POST got the first one's result: %s", b)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the second POST did not end within 30s")
	}
}

// A client that cancels a request and sends a new one with the same id (which MCP
// forbids, but a client may do): the new POST must not get the cancelled call's
// response, and the cancelled call's POST must end.
func TestHTTPIDReusedAfterCancel(t *testing.T) {
	_, _, post := basicHTTPSession(t)
	first := post(context.Background(), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`)
	defer first.Body.Close()
	events := sseEvents(first.Body)
	nextEvent(t, events) // priming
	c := post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)
	c.Body.Close()
	again := post(context.Background(), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"again"}}}`)
	defer again.Body.Close()
	b := bodyWithin(t, "the POST reusing the id", again)
	if strings.Contains(b, `"id":9`) && !strings.Contains(b, `"again"`) && !strings.Contains(b, "duplicate") {
		t.Errorf("the POST reusing id 9 got another request's answer: %s", b)
	}
	select {
	case _, ok := <-events:
		for ok {
			_, ok = <-events
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the cancelled call's POST did not end within 30s")
	}
}
