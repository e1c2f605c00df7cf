package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A client that pipes requests and does not read the answers (100,000 took toolshed to
// 1.14 GB) is not read past MaxOpenRequests open requests, an answer that cannot be
// written counting as open: toolshed stops reading, and the client's writes wait, until
// answers are read; then every request is answered.
func TestStdioBackpressure(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	in := &countingReader{r: inR}
	closeIO := func() error { inR.Close(); outW.Close(); return nil }
	t.Cleanup(func() { closeIO(); inW.Close(); outR.Close() })
	if _, err := h.g.Connect(context.Background(), gateway.LineTransport(in, outW, closeIO), ""); err != nil {
		t.Fatal(err)
	}
	// Lines of 1 KB, so that what toolshed's reader buffers ahead (64 KiB) is 64 of them.
	const n, lineLen = 3 * gateway.MaxOpenRequests, 1024
	line := func(i int) string {
		s := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_meta":{"pad":"`, i)
		return s + strings.Repeat("x", lineLen-len(s)-5) + `"}}}` + "\n"
	}
	answers := bufio.NewScanner(outR)
	answers.Buffer(nil, 1<<20)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if !answers.Scan() || !strings.Contains(answers.Text(), `"id":0,"result"`) {
		t.Fatalf("initialize: %q %v", answers.Text(), answers.Err())
	}
	start := in.n.Load()
	waits := gateway.OpenWaits()
	written := make(chan error, 1)
	go func() {
		if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
			written <- err
			return
		}
		for i := 1; i <= n; i++ {
			if _, err := io.WriteString(inW, line(i)); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	waitFor(t, "toolshed to stop reading", func() bool { return gateway.OpenWaits() > waits })
	got, bound := in.n.Load()-start, int64((gateway.MaxOpenRequests+64+2)*lineLen)
	t.Logf("toolshed read %d bytes (%d requests) and stopped", got, got/lineLen)
	if got > bound {
		t.Errorf("toolshed read %d bytes while no answer was read, more than %d (%d requests of %d bytes and its buffer)", got, bound, gateway.MaxOpenRequests, lineLen)
	}
	select {
	case err := <-written:
		t.Fatalf("the client wrote all %d requests (%v) while no answer was read", n, err)
	default:
	}

	got = 0
	for got < n && answers.Scan() {
		if strings.Contains(answers.Text(), `"result"`) {
			got++
		}
	}
	if got != n {
		t.Fatalf("%d answers, want %d: %v", got, n, answers.Err())
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}

// A batch of a 2025-03-26 session is answered with one array in the batch's order,
// whichever path serves each call (the fast path, the SDK's) and whichever answers
// first; a call of it that the client cancels is left out of the array.
func TestStdioBatchArray(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	s := newLineSessionVersion(t, h, "2025-03-26")
	s.send(t, `[{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"alpha__slow","arguments":{"steps":4}}},{"jsonrpc":"2.0","id":"gone","method":"tools/call","params":{"name":"alpha__hang","arguments":{}}},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"three"}}}]`)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"gone"}}`)
	s.send(t, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	found := make(chan string, 1)
	go func() {
		defer close(found)
		for {
			line, err := s.out.ReadString('\n')
			if err != nil {
				return
			}
			if strings.HasPrefix(line, "[") {
				found <- line
				return
			}
		}
	}()
	var array string
	select {
	case array = <-found:
	case <-time.After(time.Minute):
		t.Fatal("no array answered the batch within a minute")
	}
	var got []struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(array)), &got); err != nil {
		t.Fatalf("the batch's answer %q is not an array: %v", array, err)
	}
	var ids []any
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if want := []any{"slow", float64(2), float64(3)}; !reflect.DeepEqual(ids, want) || !strings.Contains(array, "three") {
		t.Errorf("the batch was answered with %s, want the answers of %v in that order", array, want)
	}
}
