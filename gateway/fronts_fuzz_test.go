package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// The fuzz targets of the two front doors: after a valid handshake, a client sends
// whatever bytes the fuzzer makes (seeded with valid and hostile JSON-RPC), and then a
// valid request. Whatever the bytes, the gateway must not panic, every message it
// writes must be valid JSON-RPC, and it must still answer the valid request.
//
//	go test ./gateway -run '^$' -fuzz FuzzStdioFront -fuzztime 2m
//	go test ./gateway -run '^$' -fuzz FuzzHTTPFront -fuzztime 2m

// fuzzSeeds are messages a hostile or broken client sends.
var fuzzSeeds = []string{
	// Valid requests, for the fuzzer to mutate.
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":"alpha__tool_00002","arguments":{"item":3}}}}`,
	`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"inventory item","limit":2}}}`,
	`{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"tool_describe","arguments":{"name":"alpha__tool_00003"}}}`,
	`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"cursor":"zzz"}}`,
	`{"jsonrpc":"2.0","id":10,"method":"ping"}`,
	// A second initialize, and messages a client should never send.
	`{"jsonrpc":"2.0","id":11,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"again","version":"1"}}}`,
	`{"jsonrpc":"2.0","id":12,"method":"sampling/createMessage","params":{}}`,
	`{"jsonrpc":"2.0","id":13,"method":"no/such/method"}`,
	`{"jsonrpc":"2.0","id":99,"result":{}}`,
	`{"jsonrpc":"2.0","id":98,"error":{"code":-32603,"message":"unasked"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}}`,
	`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
	// Batches, and two messages on separate lines.
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
	`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"x"}}}]`,
	"{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"tools/list\"}",
	// Ids of every size and type.
	`{"jsonrpc":"2.0","id":1e308,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":-0.5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 5000) + `","method":"ping"}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	// Deep nesting.
	`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}}}`,
	`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":"alpha__tool_00001","arguments":{"item":` + strings.Repeat(`{"a":`, 3000) + `1` + strings.Repeat("}", 3000) + `}}}}`,
	// Wrong types in the parameters.
	`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":"x"}`,
	`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":[1,2]}`,
	`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":5,"arguments":"x"}}`,
	`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":["a"],"arguments":7}}}`,
	`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"x","limit":"many"}}}`,
	`{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"x","limit":1e400}}}`,
	// Invalid UTF-8 and odd escapes inside strings.
	"{\"jsonrpc\":\"2.0\",\"id\":24,\"method\":\"tools/call\",\"params\":{\"name\":\"tool_search\",\"arguments\":{\"query\":\"\xff\xfe\xc3(\"}}}",
	`{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"\ud800\u0000"}}}`,
}

// notJSONRPC are lines that are not JSON-RPC messages at all. The stdio front must
// answer each with an error and keep serving, as the HTTP front does.
var notJSONRPC = []string{
	`hello`, `{`, `[]`, `null`, `123`, `"str"`, "\xff\xfe",
	`{"jsonrpc":"2.0","id":1,"method":5}`, `{"jsonrpc":"2.0","id":true,"method":"ping"}`,
	`{"jsonrpc":"1.0","id":1,"method":"ping"}`, `{"id":1,"method":"ping"}`,
}

// fuzzGateway starts the gateway the targets share: one upstream whose three tools
// answer with their own name, behind the bridge.
func fuzzGateway(f *testing.F) *harness {
	return startGateway(f, &config.Config{Servers: []config.Server{testServer("alpha", "many:3")}}, gateway.Options{Mode: policy.On})
}

// fuzzProbeID is the id of the valid request sent after the fuzzer's bytes.
const fuzzProbeID = "toolshed-fuzz-probe"

// fuzzProbe is that request: a call through the bridge to the upstream.
var fuzzProbe = `{"jsonrpc":"2.0","id":"` + fuzzProbeID + `","method":"tools/call","params":{"name":"tool_call","arguments":{"name":"alpha__tool_00001","arguments":{}}}}`

// checkProbeAnswer checks the answer to fuzzProbe.
func checkProbeAnswer(msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return fmt.Errorf("the probe's answer is a %T", msg)
	}
	if resp.Error != nil {
		return fmt.Errorf("the probe's answer is an error: %v", resp.Error)
	}
	if !bytes.Contains(resp.Result, []byte(`"text":"tool_00001"`)) {
		return fmt.Errorf("the probe's answer is %s, want the result of alpha__tool_00001", resp.Result)
	}
	return nil
}

// checkJSONRPC decodes a message the gateway wrote, or says why it is not valid
// JSON-RPC as MCP clients read it: one object with "jsonrpc": "2.0"; a request with a
// method, or a response with exactly one of result and error, an error with an integer
// code and a message. A response carries the id of its request; an error response to a
// message whose id could not be read (a parse error) carries none: MCP 2025-11-25 makes
// the id of an error response optional, and the TypeScript SDK (1.32.2) takes one
// without an id but refuses "id": null, which JSON-RPC 2.0 itself would use. The go-sdk
// decodes neither, so such an error is returned as a response with no id.
func checkJSONRPC(data []byte) (jsonrpc.Message, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not one JSON object: %v", err)
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return nil, errors.New(`no "jsonrpc": "2.0"`)
	}
	if _, ok := m["method"]; !ok {
		_, hasResult := m["result"]
		e, hasError := m["error"]
		id, hasID := m["id"]
		switch {
		case hasResult == hasError:
			return nil, errors.New("a response needs exactly one of result and error")
		case string(id) == "null":
			return nil, errors.New(`a response with "id": null (MCP clients refuse it; an error that answers no request omits the id)`)
		case hasResult && !hasID:
			return nil, errors.New("a result without an id")
		}
		if hasError {
			var eo struct {
				Code    *int64
				Message *string
			}
			if json.Unmarshal(e, &eo) != nil || eo.Code == nil || eo.Message == nil {
				return nil, errors.New("an error needs an integer code and a message")
			}
			if !hasID {
				return &jsonrpc.Response{Error: &jsonrpc.Error{Code: *eo.Code, Message: *eo.Message}}, nil
			}
		}
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, fmt.Errorf("the go-sdk cannot decode it: %v", err)
	}
	return msg, nil
}

// FuzzStdioFront drives the stdio front (ServeStdio's transport, on pipes).
func FuzzStdioFront(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, s := range notJSONRPC {
		f.Add([]byte(s))
	}
	h := fuzzGateway(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.Contains(data, []byte(fuzzProbeID)) {
			return // the probe's id is the test's
		}
		c := newLineClient(t, h)
		defer c.close(t)
		c.handshake(t)
		c.send(append(bytes.Clone(data), '\n'))
		c.send([]byte(fuzzProbe + "\n"))
		if err := c.await(fuzzProbeID); err != nil {
			t.Fatalf("after %q: %v", data, err)
		}
	})
}

// lineClient is a client of the stdio front, writing and reading raw lines.
type lineClient struct {
	in     *io.PipeWriter // the gateway's stdin
	inR    *io.PipeReader
	outW   *io.PipeWriter // the gateway's stdout
	done   chan struct{}  // closed when the session has ended, with endErr
	endErr error
	lines  chan []byte
	writes sync.WaitGroup
}

func newLineClient(t *testing.T, h *harness) *lineClient {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &lineClient{in: inW, inR: inR, outW: outW, done: make(chan struct{}), lines: make(chan []byte, 64)}
	ss, err := h.g.Connect(context.Background(), gateway.LineTransport(inR, outW, func() error {
		inR.Close()
		return outW.Close()
	}), "")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c.endErr = ss.Wait()
		close(c.done)
	}()
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			c.lines <- bytes.Clone(sc.Bytes())
		}
		io.Copy(io.Discard, outR) // a line too long for the scanner: keep the gateway writing
	}()
	return c
}

// send writes data to the gateway without waiting for it to be read: a gateway that
// stops reading shows as a request that gets no answer.
func (c *lineClient) send(data []byte) {
	c.writes.Add(1)
	go func() {
		defer c.writes.Done()
		c.in.Write(data)
	}()
}

// await reads the gateway's messages until the answer to id, checking each.
func (c *lineClient) await(id string) error {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				<-c.done
				return fmt.Errorf("the gateway ended the session (%v) without answering %s", c.endErr, id)
			}
			msg, err := checkJSONRPC(line)
			if err != nil {
				return fmt.Errorf("the gateway wrote %.300q: %v", line, err)
			}
			if r, ok := msg.(*jsonrpc.Response); ok && r.ID.Raw() == id {
				if id == fuzzProbeID {
					return checkProbeAnswer(msg)
				}
				if r.Error != nil {
					return fmt.Errorf("%s: %v", id, r.Error)
				}
				return nil
			}
		case <-c.done:
			return fmt.Errorf("the gateway ended the session (%v) without answering %s", c.endErr, id)
		case <-timeout:
			return fmt.Errorf("no answer to %s within 30s", id)
		}
	}
}

func (c *lineClient) handshake(t *testing.T) {
	t.Helper()
	c.send([]byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}` + "\n"))
	if err := c.await("init"); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	c.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
}

// close ends the client's stdin, as a client that exits does, and checks that the
// session ends.
func (c *lineClient) close(t *testing.T) {
	c.in.Close()
	go func() {
		for range c.lines {
		}
	}()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Errorf("the session did not end within 30s of its stdin closing")
	}
	c.inR.Close()
	c.writes.Wait()
}

// FuzzHTTPFront drives the Streamable HTTP front: the fuzzer's bytes are a POST body,
// in an initialized session or (inSession false) as a client's first request.
func FuzzHTTPFront(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), true)
	}
	for _, s := range notJSONRPC {
		f.Add([]byte(s), true)
	}
	for _, s := range fuzzSeeds[:6] {
		f.Add([]byte(s), false)
	}
	h := fuzzGateway(f)
	errLog := &testupstream.SyncBuffer{}
	srv := httptest.NewUnstartedServer(h.g.Handler(gateway.HTTPOptions{}))
	srv.Config.ErrorLog = log.New(errLog, "", 0)
	srv.Start()
	f.Cleanup(srv.Close)
	hc := srv.Client()
	f.Fuzz(func(t *testing.T, data []byte, inSession bool) {
		if bytes.Contains(data, []byte(fuzzProbeID)) {
			return
		}
		session := ""
		if inSession {
			session = httpInitialize(t, hc, srv.URL+"/mcp")
			defer httpDelete(hc, srv.URL+"/mcp", session)
		}
		a, err := httpPost(hc, srv.URL+"/mcp", session, data)
		if a.session != "" && a.session != session {
			defer httpDelete(hc, srv.URL+"/mcp", a.session) // the fuzzer's bytes began a session
		}
		if err != nil {
			t.Fatalf("posting %q: %v", data, err)
		}
		if a.status >= 500 {
			t.Fatalf("posting %q: HTTP %d", data, a.status)
		}
		if inSession {
			a, err := httpPost(hc, srv.URL+"/mcp", session, []byte(fuzzProbe))
			if err != nil || a.status != http.StatusOK || len(a.msgs) == 0 {
				t.Fatalf("after %q, the probe got HTTP %d, %d messages, %v", data, a.status, len(a.msgs), err)
			}
			if err := checkProbeAnswer(a.msgs[len(a.msgs)-1]); err != nil {
				t.Fatalf("after %q: %v", data, err)
			}
		} else {
			defer httpDelete(hc, srv.URL+"/mcp", httpInitialize(t, hc, srv.URL+"/mcp"))
		}
		if s := errLog.String(); strings.Contains(s, "panic") {
			t.Fatalf("after %q, the HTTP server logged a panic:\n%s", data, s)
		}
	})
}

// httpAnswer is what a POST got: its status, the session id it carried, and the JSON-RPC
// messages of its body.
type httpAnswer struct {
	status  int
	session string
	msgs    []jsonrpc.Message
}

// httpPost posts body (with the session's id, unless empty) and returns the answer, each
// of its messages checked.
func httpPost(hc *http.Client, url, session string, body []byte) (httpAnswer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return httpAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return httpAnswer{}, err
	}
	defer resp.Body.Close()
	a := httpAnswer{status: resp.StatusCode, session: resp.Header.Get("Mcp-Session-Id")}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return a, fmt.Errorf("reading the answer: %v", err)
	}
	if resp.StatusCode/100 != 2 {
		return a, nil // a plain-text HTTP error
	}
	var payloads [][]byte
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		for event := range strings.SplitSeq(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n\n") {
			var data []string
			for line := range strings.SplitSeq(event, "\n") {
				if d, ok := strings.CutPrefix(line, "data:"); ok {
					data = append(data, strings.TrimPrefix(d, " "))
				}
			}
			// An event with empty data primes the client to resume the stream
			// (MCP 2025-11-25), and carries no message.
			if d := strings.Join(data, "\n"); d != "" {
				payloads = append(payloads, []byte(d))
			}
		}
	case strings.HasPrefix(ct, "application/json"):
		payloads = append(payloads, b)
	case len(b) > 0:
		return a, fmt.Errorf("HTTP %d with a %q body: %.300q", resp.StatusCode, ct, b)
	}
	for _, p := range payloads {
		m, err := checkJSONRPC(p)
		if err != nil {
			return a, fmt.Errorf("the gateway answered %.300q: %v", p, err)
		}
		a.msgs = append(a.msgs, m)
	}
	return a, nil
}

// httpInitialize starts a session with a plain initialize and returns its id.
func httpInitialize(t *testing.T, hc *http.Client, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, id)
	}
	if a, err := httpPost(hc, url, id, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil || a.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d, %v", a.status, err)
	}
	return id
}

// httpDelete ends a session, so that fuzzing does not pile sessions up.
func httpDelete(hc *http.Client, url, session string) {
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", session)
	if resp, err := hc.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
