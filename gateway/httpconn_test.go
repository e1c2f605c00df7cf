package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client whose stream is open but that does not read it (its writer is blocked on
// the connection): the notifications sent to it meanwhile are bounded, as the messages
// held for a client without a GET stream are; requests and responses are never dropped.
func TestHTTPStreamQueueBounded(t *testing.T) {
	c := newHTTPConn("x")
	standing := &stream{conn: c, standing: true, notify: make(chan struct{}, 1)}
	c.standing = standing
	note := &jsonrpc.Request{Method: "notifications/message", Params: []byte(`{"level":"info","data":"x"}`)}
	for range 10 * maxUnsentMessages {
		if err := c.Write(context.Background(), note); err != nil {
			t.Fatal(err)
		}
	}
	id, _ := jsonrpc.MakeID("s1")
	if err := c.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "sampling/createMessage", Params: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	n, last := len(standing.queue), string(standing.queue[len(standing.queue)-1])
	c.mu.Unlock()
	if n > maxUnsentMessages+1 {
		t.Errorf("%d messages queued on a stream no one reads, want at most %d", n, maxUnsentMessages+1)
	}
	if last != `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}` {
		t.Errorf("the last message queued is %s, want the sampling request", last)
	}
}

// A POST that comes as its session closes registers nothing that outlives the
// session: relatedStreams (a global map) would otherwise keep the closed connection,
// its streams and their replay buffers for the life of the process.
func TestHTTPTrackAfterCloseLeavesNothing(t *testing.T) {
	c := newHTTPConn("x")
	c.Close()
	id, _ := jsonrpc.MakeID("r1")
	var ex *mcp.RequestExtra
	s, _, err := c.track([]jsonrpc.Message{&jsonrpc.Request{ID: id, Method: "ping"}}, func() *mcp.RequestExtra {
		ex = &mcp.RequestExtra{}
		return ex
	})
	if s != nil {
		// As servePOST does when the session refuses the message.
		if c.deliver(&jsonrpc.Request{ID: id, Method: "ping"}) {
			t.Fatal("a closed connection took a message")
		}
		s.abandon(s.gen, false)
	}
	if _, ok := relatedStreams.Load(ex); ok {
		relatedStreams.Delete(ex)
		t.Errorf("a request tracked on a closed connection stays in relatedStreams (err %v)", err)
	}
}

// A session's replay buffers are bounded in bytes, not only in streams: a client whose
// calls return large results over event streams (a file read, a long listing) would
// otherwise keep its last maxReplayStreams results, whatever their size, for the
// session's life, in every session.
func TestHTTPReplayBytesBounded(t *testing.T) {
	c := newHTTPConn("x")
	big := strings.Repeat("x", 1<<20)
	for i := range 2 * maxReplayStreams {
		id, _ := jsonrpc.MakeID(fmt.Sprintf("r%d", i))
		s, _, err := c.track([]jsonrpc.Message{&jsonrpc.Request{ID: id, Method: "tools/call"}}, func() *mcp.RequestExtra { return &mcp.RequestExtra{} })
		if err != nil {
			t.Fatal(err)
		}
		gen := s.attach()
		s.resumable()
		if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: []byte(`{"content":[{"type":"text","text":"` + big + `"}]}`)}); err != nil {
			t.Fatal(err)
		}
		if msgs, _, done, _ := s.take(gen, true); len(msgs) != 1 || !done {
			t.Fatalf("stream %d: took %d messages, done %v", i, len(msgs), done)
		}
	}
	c.mu.Lock()
	kept := 0
	for _, s := range c.streams {
		kept += s.bytes
	}
	c.mu.Unlock()
	if kept > maxReplaySessionBytes+(1<<20)+100 {
		t.Errorf("the session keeps %d bytes of events for replay, want at most %d (and the newest event)", kept, maxReplaySessionBytes)
	}
}
