package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's client decodes tools/list into typed structs, re-ordering schema keys and
// dropping fields it does not model. toolshed promises clients every definition exactly as
// the server sent it, so it captures the raw tools/list results on their way in: at the
// JSON-RPC connection for stdio and SSE upstreams, and at the HTTP round trip for
// Streamable HTTP ones, whose connection must stay the SDK's own.

// toolsCapture collects the raw results of an upstream's tools/list requests.
type toolsCapture struct {
	mu      sync.Mutex
	pending map[string]bool // JSON-encoded ids of tools/list requests in flight
	results []json.RawMessage
}

func newToolsCapture() *toolsCapture { return &toolsCapture{pending: map[string]bool{}} }

func idKey(raw any) string {
	b, _ := json.Marshal(raw)
	return string(b)
}

func (c *toolsCapture) request(id string) {
	c.mu.Lock()
	c.pending[id] = true
	c.mu.Unlock()
}

func (c *toolsCapture) response(id string, result json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[id] {
		delete(c.pending, id)
		c.results = append(c.results, append(json.RawMessage(nil), result...))
	}
}

// offer takes the result of msg, a JSON-RPC message from a Streamable HTTP response, if
// it answers a tools/list request in flight.
func (c *toolsCapture) offer(msg []byte) {
	id, result := memberValue(msg, "id"), memberValue(msg, "result")
	if len(id) > 0 && len(result) > 0 {
		c.response(canonicalID(id), result)
	}
}

// take returns the raw results captured since the last take and forgets them.
func (c *toolsCapture) take() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.results
	c.results = nil
	return r
}

// captureTransport wraps the connection of every upstream transport but Streamable HTTP
// (stdio, SSE, toolshed's own catalog servers) to see tools/list traffic, to call tools
// on it directly, and to relay the server's sampling and elicitation requests itself.
type captureTransport struct {
	mcp.Transport
	capture *toolsCapture
	relay   relayFunc
	notify  notifyFunc
	// connected, when set, is told of each new connection.
	connected func(*captureConn)
}

// notifyFunc passes an upstream's notification on at once, in the order it came, and
// reports whether it did.
type notifyFunc func(ctx context.Context, method string, params json.RawMessage) bool

// relayFunc passes an upstream's request for the client's input on and returns the answer.
type relayFunc func(context.Context, mcp.InputRequest) (mcp.InputResponse, error)

func (t captureTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &captureConn{Connection: conn, capture: t.capture, relay: t.relay, notify: t.notify, calls: map[string]*pendingCall{}}
	if lc, ok := conn.(*lineConn); ok {
		// Answers to toolshed's own calls, and the notifications that come before
		// them, are handled on the goroutine that reads them, in order, without a
		// hop through the SDK's reading goroutine.
		lc.route = c.intercept
	}
	if t.connected != nil {
		t.connected(c)
	}
	return c, nil
}

type captureConn struct {
	mcp.Connection
	capture *toolsCapture
	relay   relayFunc
	notify  notifyFunc
	// The envelope the SDK stamps on its requests, for toolshed's own calls on a
	// modern connection (see link.callMeta).
	envelopeMeta

	// Calls toolshed makes itself (see start), by request id.
	mu     sync.Mutex
	seq    uint64
	calls  map[string]*pendingCall
	closed bool // reading failed or the connection was closed: no answer will come
	// abandoned holds the late functions of calls toolshed cancelled, by request id,
	// oldest first in abandonedOrder: a server may answer a call after its
	// notifications/cancelled (it crossed the answer, or the server ignored it), and
	// what it answered may have started something that must be stopped (see
	// startLate). At most maxAbandoned are kept: a server that honours the cancel
	// never answers, and its ids would otherwise pile up.
	abandoned      map[string]func(json.RawMessage)
	abandonedOrder []string
}

// maxAbandoned bounds the cancelled calls a connection waits for a late answer to.
const maxAbandoned = 64

// pendingCall is a call of toolshed's own, waiting for its answer.
type pendingCall struct {
	done func(json.RawMessage, error)
	stop func() bool // stops watching the call's context
	// late, when set, gets the result of the call if it comes after the call was
	// cancelled (see startLate).
	late func(json.RawMessage)
}

// callIDPrefix starts the ids of the requests captureConn sends itself. They are
// strings, and the SDK's own ids numbers, so the two never meet.
const callIDPrefix = "toolshed-"

// start sends a request on the connection; done gets its result as the server wrote
// it, without the SDK's client decoding it into its structs (which would lose what they
// do not model) and back, or an error. Ending ctx sends notifications/cancelled, as the
// SDK does. done is called once, from the goroutine that reads the answer or ends the
// call, so it must not block.
func (c *captureConn) start(ctx context.Context, method string, params json.RawMessage, done func(json.RawMessage, error)) {
	c.startLate(ctx, method, params, done, nil)
}

// startLate is start, and late, when not nil, gets the result the server sends after
// ctx ended the request (done has had the cancellation then): a tools/call answered
// with a task handle after toolshed cancelled it leaves a task running, which only
// tasks/cancel stops. It is called at most once, from the reading goroutine, and must
// not block.
func (c *captureConn) startLate(ctx context.Context, method string, params json.RawMessage, done func(json.RawMessage, error), late func(json.RawMessage)) {
	p := &pendingCall{done: done, late: late}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		done(nil, mcp.ErrConnectionClosed)
		return
	}
	c.seq++
	key := callIDPrefix + strconv.FormatUint(c.seq, 36)
	p.stop = context.AfterFunc(ctx, func() {
		if c.abandon(key) == nil {
			return // answered meanwhile
		}
		reason := "the client cancelled the call"
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, ErrTimeout):
			reason = "toolshed's call_timeout passed"
		case errors.Is(cause, errStopping):
			reason = "toolshed is shutting down"
		}
		cancelled, _ := json.Marshal(map[string]any{"requestId": key, "reason": reason})
		_ = c.Connection.Write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: cancelled})
		done(nil, context.Cause(ctx))
	})
	c.calls[key] = p
	c.mu.Unlock()
	id, _ := jsonrpc.MakeID(key)
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		if c.take(key) != nil {
			p.stop()
			done(nil, err)
		}
	}
}

// take removes a pending call and returns it, or nil when it has ended already.
func (c *captureConn) take(key string) *pendingCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.calls[key]
	delete(c.calls, key)
	return p
}

// abandon is take for a call being cancelled: in the same critical section, so that
// an answer read meanwhile finds either the call or its late function, the call's late
// function (if it has one) is kept for an answer that comes anyway.
func (c *captureConn) abandon(key string) *pendingCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.calls[key]
	delete(c.calls, key)
	if p == nil || p.late == nil || c.closed {
		return p
	}
	if c.abandoned == nil {
		c.abandoned = map[string]func(json.RawMessage){}
	}
	if len(c.abandonedOrder) >= maxAbandoned {
		delete(c.abandoned, c.abandonedOrder[0])
		c.abandonedOrder = c.abandonedOrder[1:]
	}
	c.abandoned[key] = p.late
	c.abandonedOrder = append(c.abandonedOrder, key)
	return p
}

// takeLate removes the late function of a cancelled call and returns it, or nil.
func (c *captureConn) takeLate(key string) func(json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	late := c.abandoned[key]
	if late != nil {
		delete(c.abandoned, key)
		for i, k := range c.abandonedOrder {
			if k == key {
				c.abandonedOrder = append(c.abandonedOrder[:i], c.abandonedOrder[i+1:]...)
				break
			}
		}
	}
	return late
}

// answered hands a response to the call of toolshed's own that waits for it, and
// reports whether the response was one of toolshed's.
func (c *captureConn) answered(resp *jsonrpc.Response) bool {
	key, ok := resp.ID.Raw().(string)
	if !ok || !strings.HasPrefix(key, callIDPrefix) {
		return false
	}
	p := c.take(key)
	if p == nil { // cancelled meanwhile: the answer is nobody's, but for its late
		if late := c.takeLate(key); late != nil && resp.Error == nil {
			late(resp.Result)
		}
		return true
	}
	p.stop()
	if resp.Error != nil {
		p.done(nil, resp.Error)
	} else {
		p.done(resp.Result, nil)
	}
	return true
}

// fail ends every pending call: the connection will not answer them.
func (c *captureConn) fail() {
	c.mu.Lock()
	c.closed = true
	calls := c.calls
	c.calls = map[string]*pendingCall{}
	c.abandoned, c.abandonedOrder = nil, nil // no answer will come
	c.mu.Unlock()
	for _, p := range calls {
		p.stop()
		p.done(nil, mcp.ErrConnectionClosed)
	}
}

func (c *captureConn) Close() error {
	c.fail()
	return c.Connection.Close()
}

func (c *captureConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		if req.Method == "tools/list" {
			c.capture.request(idKey(req.ID.Raw()))
		}
		c.learn(req.Params)
	}
	return c.Connection.Write(ctx, msg)
}

// intercept handles a message before the SDK sees it, and reports whether it did: an
// answer to one of toolshed's own calls, or a progress or log notification. These are
// passed on here, in the order they came: the SDK would hand notifications to its
// handlers on another goroutine, and the client could get a call's result before its
// progress.
func (c *captureConn) intercept(msg jsonrpc.Message) bool {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		return c.answered(m)
	case *jsonrpc.Request:
		return c.notify != nil && !m.ID.IsValid() && c.notify(context.Background(), m.Method, m.Params)
	}
	return false
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.fail()
		}
		if msg != nil && c.intercept(msg) {
			continue
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil && resp.ID.IsValid() {
			c.capture.response(idKey(resp.ID.Raw()), resp.Result)
		}
		if req, ok := msg.(*jsonrpc.Request); ok && c.relay != nil && req.ID.IsValid() && (req.Method == "elicitation/create" || req.Method == "sampling/createMessage") {
			// Answered here rather than by the SDK's client, which checks requests
			// against its own reading of the schema: a gateway passes them on as sent,
			// and lets the client that answers be the judge.
			go c.answer(req)
			continue
		}
		return msg, err
	}
}

// answer relays one sampling or elicitation request and writes the reply.
func (c *captureConn) answer(req *jsonrpc.Request) {
	ctx := context.Background()
	var params mcp.InputRequest
	var err error
	if req.Method == "elicitation/create" {
		p := &mcp.ElicitParams{}
		err, params = json.Unmarshal(req.Params, p), p
	} else {
		p := &mcp.CreateMessageParams{}
		err, params = json.Unmarshal(req.Params, p), p
	}
	resp := &jsonrpc.Response{ID: req.ID}
	var res mcp.InputResponse
	if err == nil {
		res, err = c.relay(ctx, params)
	}
	if err == nil {
		resp.Result, err = json.Marshal(res)
	}
	if err != nil {
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) {
			wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		resp.Result, resp.Error = nil, wire
	}
	_ = c.Connection.Write(ctx, resp)
}

// captureRoundTripper sees tools/list requests and their responses on a Streamable HTTP
// upstream, whether the response comes as JSON or as a server-sent event stream. It also
// adds the configured headers to every request.
type captureRoundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	capture *toolsCapture
}

func (rt *captureRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range rt.headers {
		req.Header.Set(k, v)
	}
	sink, _ := req.Context().Value(resultSinkKey{}).(*resultSink)
	var ids []string
	if req.Method == http.MethodPost && req.Body != nil && (rt.capture != nil || sink != nil) {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		if rt.capture != nil {
			ids = requestIDs(body, "tools/list")
			for _, id := range ids {
				rt.capture.request(id)
			}
		}
		if sink != nil {
			if calls := requestIDs(body, "tools/call"); len(calls) == 1 {
				sink.expect(calls[0])
			}
		}
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case len(ids) > 0:
		resp.Body = &messageBody{ReadCloser: resp.Body, sse: mediaType == "text/event-stream", deliver: rt.capture.offer}
	case sink.expecting():
		// The call's response, or a stream resumed with Last-Event-ID that carries it.
		resp.Body = &messageBody{ReadCloser: resp.Body, sse: mediaType == "text/event-stream", deliver: sink.offer}
	}
	return resp, nil
}

// requestIDs returns the ids of the requests for method in a JSON-RPC message or batch.
func requestIDs(body []byte, method string) []string {
	var msgs []struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '{' {
		body = append(append([]byte{'['}, body...), ']')
	}
	if json.Unmarshal(body, &msgs) != nil {
		return nil
	}
	var ids []string
	for _, m := range msgs {
		if m.Method == method && len(m.ID) > 0 {
			ids = append(ids, canonicalID(m.ID))
		}
	}
	return ids
}

// canonicalID re-encodes a raw JSON-RPC id the way idKey encodes the SDK's ids.
func canonicalID(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return idKey(i)
		}
	}
	return idKey(v)
}

// jsonMessages returns the JSON-RPC messages of a JSON response body: the body itself,
// or the elements of a batch.
func jsonMessages(body []byte) [][]byte {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(body, &batch) != nil {
			return nil
		}
		out := make([][]byte, len(batch))
		for i, m := range batch {
			out[i] = m
		}
		return out
	}
	return [][]byte{body}
}

// resultSink receives the result of one tools/call that the SDK's Streamable HTTP client
// makes, as the server wrote it, from the round trip that carries it (the call's context
// reaches the round tripper). The SDK decodes its own copy, after the sink has its bytes.
type resultSink struct {
	mu  sync.Mutex
	id  string // the call's id (as canonicalID), once its request went out
	raw json.RawMessage
}

type resultSinkKey struct{}

func withResultSink(ctx context.Context, s *resultSink) context.Context {
	return context.WithValue(ctx, resultSinkKey{}, s)
}

// expect starts waiting for the result of the call with this id. A sink that saw the
// result of an earlier request (a retry the SDK made on the same context) forgets it:
// the call ends with the last result, not the first.
func (s *resultSink) expect(id string) {
	s.mu.Lock()
	s.id, s.raw = id, nil
	s.mu.Unlock()
}

func (s *resultSink) expecting() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id != "" && s.raw == nil
}

// offer takes the result from msg, a JSON-RPC message, if it answers the call.
func (s *resultSink) offer(msg []byte) {
	id, result := memberValue(msg, "id"), memberValue(msg, "result")
	if len(id) == 0 || len(result) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.raw == nil && canonicalID(id) == s.id {
		s.raw = append(json.RawMessage(nil), result...)
	}
}

func (s *resultSink) result() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw
}

// messageBody hands deliver the JSON-RPC messages of a response body as they arrive:
// each server-sent event as soon as its blank line is read, or a JSON body (or the
// messages of a batch) at its end. Either way a message is delivered before the SDK,
// reading the same bytes after this, can see it: the SDK hands a response to its
// caller as soon as it has read it, and drains and closes the body only later.
type messageBody struct {
	io.ReadCloser
	sse     bool
	deliver func(msg []byte)
	pending []byte   // bytes of the current line not yet complete
	data    [][]byte // data lines of the current event
}

func (b *messageBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.pending = append(b.pending, p[:n]...)
	if b.sse {
		for {
			i := bytes.IndexByte(b.pending, '\n')
			if i < 0 {
				break
			}
			line := bytes.TrimSuffix(b.pending[:i], []byte("\r"))
			switch {
			case len(line) == 0:
				if len(b.data) > 0 {
					b.deliver(bytes.Join(b.data, []byte("\n")))
					b.data = nil
				}
			case bytes.HasPrefix(line, []byte("data:")):
				d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
				b.data = append(b.data, append([]byte(nil), d...))
			}
			b.pending = b.pending[i+1:]
		}
	} else if err != nil {
		for _, msg := range jsonMessages(b.pending) {
			b.deliver(msg)
		}
		b.pending = nil
	}
	return n, err
}
