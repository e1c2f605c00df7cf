package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// The fast path (gateway/fastcall.go) serves an ordinary tools/call at the connection
// instead of through the SDK's dispatch. These tests hold it to what the SDK's path
// writes, byte for byte, on both fronts, and to the SDK path's per-session isolation
// and cancellation.

// fastCallScript is what TestFastCallBytes sends after the handshake, per mode: calls
// the fast path serves (results with escapes, numbers, string ids, tool errors,
// refused arguments, progress, the bridge tools) and some it leaves to the SDK (an
// unknown tool, a _meta it does not read).
func fastCallScript(mode policy.Mode) []string {
	if mode == policy.On {
		return []string{
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"echo text"}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_describe","arguments":{"name":"alpha__add"}}}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":"alpha__echo","arguments":{"text":"h\u00e9llo <&> \"q\""}}}}`,
			`{"jsonrpc":"2.0","id":"five","method":"tools/call","params":{"name":"tool_call","arguments":{"name":"alpha__add","arguments":{"a":0.1,"b":0.2}}}}`,
			`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":"alpha__nope","arguments":{}}}}`,
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":"alpha__echo","arguments":{}}}}`,
			`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"_meta":{"progressToken":"p8"},"name":"tool_call","arguments":{"name":"alpha__slow","arguments":{"steps":2}}}}`,
		}
	}
	return []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"h\u00e9llo <&> \"q\""}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"alpha__add","arguments":{"a":0.1,"b":0.2}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__fail","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":7}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"alpha__echo"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha__nope","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"_meta":{"progressToken":8},"name":"alpha__slow","arguments":{"steps":2}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"_meta":{"progressToken":"p9","x":1},"name":"alpha__args","arguments":{"b":1e400,"a":[1.10]}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"alpha__args","arguments":{"n":12345678901234567890}}}`,
	}
}

// lineSession is a client on the stdio front, driven line by line.
type lineSession struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	outR *io.PipeReader
}

func newLineSession(t *testing.T, h *harness) *lineSession {
	t.Helper()
	return newLineSessionVersion(t, h, "2025-11-25")
}

// newLineSessionVersion is newLineSession for a client of protocol version.
func newLineSessionVersion(t *testing.T, h *harness, version string) *lineSession {
	t.Helper()
	s := newRawLineSession(t, h)
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.until(t, "1")
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// newRawLineSession is a client on the stdio front that has sent nothing yet.
func newRawLineSession(t *testing.T, h *harness) *lineSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	if _, err := h.g.Connect(context.Background(), gateway.LineTransport(inR, outW, func() error {
		inR.Close()
		return outW.Close()
	}), ""); err != nil {
		t.Fatal(err)
	}
	s := &lineSession{in: inW, out: bufio.NewReader(outR), outR: outR}
	t.Cleanup(s.close)
	return s
}

// close hangs up, as a client that goes away.
func (s *lineSession) close() {
	s.in.Close()
	s.outR.Close()
}

func (s *lineSession) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// until returns the lines read up to and including the response with id (JSON).
func (s *lineSession) until(t *testing.T, id string) []string {
	t.Helper()
	var lines []string
	for {
		line, err := s.out.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the response %s: %v (read %q)", id, err, lines)
		}
		lines = append(lines, line)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal([]byte(line), &m)
		if m.Method == "" && string(m.ID) == id {
			return lines
		}
	}
}

// untilAll reads until the responses with each of ids (JSON) have been read, in any
// order.
func (s *lineSession) untilAll(t *testing.T, ids ...string) {
	t.Helper()
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	for len(left) > 0 {
		line, err := s.out.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the responses %v: %v", left, err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal([]byte(line), &m)
		if m.Method == "" {
			delete(left, string(m.ID))
		}
	}
}

// requestID returns the id of a request line, as JSON.
func requestID(t *testing.T, line string) string {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	return string(m.ID)
}

// fastCallTranscript runs fastCallScript on a new gateway over front ("stdio", "http"
// or "stateless") and returns everything written back, in order.
func fastCallTranscript(t *testing.T, front string, mode policy.Mode) string {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: mode})
	var out strings.Builder
	switch front {
	case "stdio":
		s := newLineSession(t, h)
		for _, line := range fastCallScript(mode) {
			s.send(t, line)
			out.WriteString(strings.Join(s.until(t, requestID(t, line)), ""))
		}
	case "http":
		// Every call is answered as JSON unless it sends progress first, however
		// slow the machine (the stream or JSON choice is not what is compared).
		defer gateway.SetPrimeDelay(time.Minute)()
		post := rawSession(t, serveHTTP(t, h, gateway.HTTPOptions{})+"/mcp")
		for _, line := range fastCallScript(mode) {
			resp := post(context.Background(), line)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Fprintf(&out, "%d %s\n%s\n", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	case "modern-stdio":
		// No initialize: the first request makes the connection a modern one.
		s := newRawLineSession(t, h)
		for _, line := range modernCallScript(mode) {
			s.send(t, line)
			out.WriteString(strings.Join(s.until(t, requestID(t, line)), ""))
		}
	case "modern-http":
		// Each POST on a session of its own, as the protocol has no sessions.
		endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
		for _, line := range modernCallScript(mode) {
			resp, body := rawPOST(t, context.Background(), endpoint, line, modernCallHeaders(t, line))
			fmt.Fprintf(&out, "%d %s\n%s\n", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	case "stateless":
		// Each POST on a session of its own, as a client of 2025-11-25 sends it.
		endpoint := serveHTTP(t, h, gateway.HTTPOptions{Stateless: true}) + "/mcp"
		for _, line := range fastCallScript(mode) {
			resp, body := rawPOST(t, context.Background(), endpoint, line, map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
			fmt.Fprintf(&out, "%d %s\n%s\n", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	return out.String()
}

// TestFastCallBytes checks that a tools/call served by the fast path is answered with
// the very bytes the SDK's path answers it with (results, errors, progress, event
// streams), over stdio, Streamable HTTP sessions and stateless HTTP, and for clients
// of MCP 2026-07-28 over stdio and HTTP, for direct calls and the bridge tools.
func TestFastCallBytes(t *testing.T) {
	for _, front := range []string{"stdio", "http", "stateless", "modern-stdio", "modern-http"} {
		for _, mode := range []policy.Mode{policy.Off, policy.On} {
			t.Run(fmt.Sprintf("%s/%s", front, mode), func(t *testing.T) {
				restore := gateway.SetFastCalls(false)
				sdk := fastCallTranscript(t, front, mode)
				restore()
				before := gateway.FastCallsServed()
				fast := fastCallTranscript(t, front, mode)
				served := gateway.FastCallsServed() - before
				if sdk != fast {
					t.Errorf("the fast path wrote\n%s\nthe SDK's path wrote\n%s", fast, sdk)
				}
				// Every call but the ones the fast path leaves to the SDK (an unknown
				// tool, a _meta it does not read, params without arguments... ).
				script := fastCallScript(mode)
				if strings.HasPrefix(front, "modern") {
					// Left to the SDK besides: a call that asks for a log level, and
					// the first request of a modern stdio connection, which joins it.
					script = modernCallScript(mode)
				}
				if want := int64(len(script) - 3); served < want {
					t.Errorf("the fast path served %d calls, want at least %d", served, want)
				}
				if !strings.Contains(fast, "done 2 steps") || !strings.Contains(fast, `"progress":2`) {
					t.Errorf("the slow call's progress or result is missing:\n%s", fast)
				}
			})
		}
	}
}

// TestFastCallSessionsIsolated runs the same request ids at once in two sessions, on
// each front: each session gets its own results and its own progress, nothing of the
// other's.
func TestFastCallSessionsIsolated(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	before := gateway.FastCallsServed()
	type session struct {
		name string
		run  func(line string) string // sends one request, returns all that came back for it
	}
	var sessions []session
	for i := range 2 {
		s := newLineSession(t, h)
		sessions = append(sessions, session{fmt.Sprintf("stdio-%d", i), func(line string) string {
			s.send(t, line)
			return strings.Join(s.until(t, requestID(t, line)), "")
		}})
		post := rawSession(t, endpoint)
		sessions = append(sessions, session{fmt.Sprintf("http-%d", i), func(line string) string {
			resp := post(context.Background(), line)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return string(body)
		}})
	}
	var wg sync.WaitGroup
	got := make([][]string, len(sessions))
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = append(got[i],
				s.run(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"tok"},"name":"alpha__slow","arguments":{"steps":%d}}}`, i+2)),
				s.run(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"%s"}}}`, s.name)))
		}()
	}
	wg.Wait()
	for i, s := range sessions {
		slow, echo := got[i][0], got[i][1]
		if want := fmt.Sprintf("done %d steps", i+2); !strings.Contains(slow, want) {
			t.Errorf("%s: the slow call's answer lacks %q:\n%s", s.name, want, slow)
		}
		if n := strings.Count(slow, "notifications/progress"); n != i+2 {
			t.Errorf("%s: %d progress notifications, want %d (its own steps):\n%s", s.name, n, i+2, slow)
		}
		if !strings.Contains(echo, `"text":"`+s.name+`"`) {
			t.Errorf("%s: the echo is not its own:\n%s", s.name, echo)
		}
		for j, o := range sessions {
			if j != i && strings.Contains(echo+slow, o.name) {
				t.Errorf("%s got %s's message:\n%s", s.name, o.name, echo+slow)
			}
		}
	}
	if served := gateway.FastCallsServed() - before; served < int64(2*len(sessions)) {
		t.Errorf("the fast path served %d calls, want %d", served, 2*len(sessions))
	}
}

// TestFastCallCancelled cancels a call the fast path serves, on the stdio front: the
// upstream call is cancelled, no response is written for it, and a call with the same
// id after it is answered.
func TestFastCallCancelled(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	s := newLineSession(t, h)
	before := gateway.FastCallsServed()
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__slow","arguments":{"steps":100}}}`)
	time.Sleep(100 * time.Millisecond)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	var lines []string
	for i := 4; ; i++ {
		if i > 200 {
			t.Fatalf("the upstream call was not cancelled: %d calls later, the server says %s", len(lines), lines[len(lines)-1])
		}
		s.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__cancelled","arguments":{}}}`, i))
		got := s.until(t, fmt.Sprint(i))
		lines = append(lines, got...)
		if strings.Contains(got[len(got)-1], `"text":"1"`) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"again"}}}`)
	lines = append(lines, s.until(t, "3")...)
	for _, l := range lines[:len(lines)-1] {
		if requestID(t, l) == "3" {
			t.Errorf("a response to the cancelled request was written: %s", l)
		}
	}
	if last := lines[len(lines)-1]; !bytes.Contains([]byte(last), []byte(`"again"`)) {
		t.Errorf("the call after the cancelled one got %s", last)
	}
	if served := gateway.FastCallsServed() - before; served < 3 {
		t.Errorf("the fast path served %d calls, want at least 3", served)
	}
}

// TestFastCallDuplicateID sends a call with the id of a call in flight, on the stdio
// front: it is dropped as the SDK drops it (the SDK's refusal has no id, and is never
// written), and the first call is answered.
func TestFastCallDuplicateID(t *testing.T) {
	transcript := func() string {
		h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
		s := newLineSession(t, h)
		s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__slow","arguments":{"steps":2}}}`)
		s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"dup"}}}`)
		return strings.Join(s.until(t, "3"), "")
	}
	restore := gateway.SetFastCalls(false)
	sdk := transcript()
	restore()
	fast := transcript()
	if sdk != fast {
		t.Errorf("the fast path wrote\n%s\nthe SDK's path wrote\n%s", fast, sdk)
	}
	if strings.Contains(fast, "dup") || !strings.Contains(fast, "done 2 steps") {
		t.Errorf("want the duplicate dropped and the first call answered:\n%s", fast)
	}
}

// TestFastCallGoroutinesBounded: on the stdio front, the goroutine that read a call
// runs it and another reads on (lineConn.handOff); the one done with its call waits as
// the spare reader, or ends. However many calls, sequential or at once, the goroutines
// left are as many as after the first few; when the client goes, they end.
func TestFastCallGoroutinesBounded(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	base := runtime.NumGoroutine()
	s := newLineSession(t, h)
	before := gateway.FastCallsServed()
	call := func(id int) {
		s.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"}}}`, id))
	}
	for id := 2; id < 12; id++ {
		call(id)
		s.until(t, fmt.Sprint(id))
	}
	settled := runtime.NumGoroutine()
	for id := 12; id < 412; id++ {
		call(id)
		s.until(t, fmt.Sprint(id))
	}
	// At once, each on a goroutine of its own. The last one sent answers first, as any
	// of them may on a loaded machine: every answer is read, or the goroutines writing
	// those not read would wait on the pipe.
	var ids []string
	for id := 412; id < 432; id++ {
		steps := 20
		if id == 431 {
			steps = 1
		}
		s.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__slow","arguments":{"steps":%d}}}`, id, steps))
		ids = append(ids, fmt.Sprint(id))
	}
	s.untilAll(t, ids...)
	call(432)
	s.until(t, "432")
	if served := gateway.FastCallsServed() - before; served < 400 {
		t.Fatalf("the fast path served %d calls, want at least 400: this test proves nothing of it", served)
	}
	waitFor(t, "the goroutines of the calls to end", func() bool { return runtime.NumGoroutine() <= settled+5 })
	s.close()
	waitFor(t, "the session's goroutines to end", func() bool { return runtime.NumGoroutine() <= base+5 })
}
