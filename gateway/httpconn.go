package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolshed serves Streamable HTTP with a connection of its own rather than the SDK's
// StreamableHTTPHandler, for the reason it serves stdio with lineConn: the SDK's handler
// decoded every POST two or three times with decoders that allocate 32 KiB each, and
// handed each message through more goroutines than the call needs; over HTTP that was
// most of what toolshed added to a call. httpConn reads each POST's messages once
// (decodeMessages), hands them to the session as stdio's connection does, and routes
// what the session writes back to the HTTP response waiting for it:
//
//   - the response to a request, to the POST that carried the request;
//   - a request or notification sent while handling a client's request (progress, a
//     log message, a sampling or elicitation request of a tool call), to that
//     request's POST, as the SDK does: toolshed's handlers send them with the
//     request's context, which relatedStream marks;
//   - anything else, to the client's standing GET stream, or held (up to
//     maxUnsentMessages) until the client opens one.
//
// A POST with one request is answered as application/json when its response is the
// first message for it within primeDelay: one write, and no event stream for the
// client to parse. Otherwise the answer is an event stream; from protocol 2025-11-25 on
// it starts with a priming event, whose ID a client that loses the stream resumes from
// (GET with Last-Event-ID), so a long call's result is not lost with the connection.

// maxUnsentMessages bounds the messages held for a client that has no GET stream.
const maxUnsentMessages = 256

// A session keeps the events of its last maxReplayStreams resumable streams for
// clients that resume one, each stream's newest maxReplayBytes: enough for a client
// that lost its connection to get the rest of a call (its result and the progress
// before it), bounded however long the call or many the calls.
//
// maxReplaySessionBytes bounds them all (but the newest stream's newest event, a call's
// result however large): without it a session whose calls return large results (a
// file read) kept its last maxReplayStreams results, whatever their size, for its
// life.
const (
	maxReplayStreams      = 8
	maxReplayBytes        = 256 << 10
	maxReplaySessionBytes = 1 << 20
)

// httpConn is the mcp.Connection of one Streamable HTTP session.
type httpConn struct {
	id       string
	incoming chan jsonrpc.Message
	closed   chan struct{}
	once     sync.Once
	// stateless: the session lives for one POST (HTTPOptions.Stateless), so no client
	// can answer a request of toolshed's.
	stateless bool

	mu        sync.Mutex
	pending   map[jsonrpc.ID]*stream // requests not answered yet, and the stream to answer on
	cancelled map[jsonrpc.ID]bool    // requests the client cancelled: their responses are dropped
	streams   map[string]*stream     // streams with events a client may resume, by id
	order     []string               // their ids, oldest first
	kept      int                    // bytes of their events
	standing  *stream                // the GET stream, or nil
	unsent    [][]byte               // messages for the GET stream while there is none
	seq       int                    // numbers streams
	// fast holds the cancel function of each request served by the fast path
	// (fastcall.go) and not answered yet; life ends them all when the session closes.
	fast      map[jsonrpc.ID]context.CancelFunc
	life      context.Context
	end       context.CancelFunc
	fastCalls atomic.Pointer[fastSession]
}

func newHTTPConn(id string) *httpConn {
	life, end := context.WithCancel(context.Background())
	return &httpConn{id: id, incoming: make(chan jsonrpc.Message), closed: make(chan struct{}),
		pending: map[jsonrpc.ID]*stream{}, cancelled: map[jsonrpc.ID]bool{}, streams: map[string]*stream{},
		fast: map[jsonrpc.ID]context.CancelFunc{}, life: life, end: end}
}

// serveFast makes c serve the ordinary tools/call requests of session ss itself, from
// now on (see fastcall.go).
func (c *httpConn) serveFast(g *Gateway, profile string, ss *mcp.ServerSession) {
	c.fastCalls.Store(&fastSession{g: g, profile: profile, ss: ss})
}

// tryFast serves m, a message of a POST that track registered, on the fast path when
// it can (see fastCallOf), and reports whether it did; otherwise it is to be
// delivered to the session. Its response goes where the SDK's would (see Write).
func (c *httpConn) tryFast(m jsonrpc.Message) bool {
	serve, ok := c.fastServe(m)
	if ok {
		go serve()
	}
	return ok
}

// fastServe returns what serves m on the fast path, when it can (see fastCallOf), to
// run on any goroutine; false when m is to be delivered to the session.
func (c *httpConn) fastServe(m jsonrpc.Message) (func(), bool) {
	req, ok := m.(*jsonrpc.Request)
	fs := c.fastCalls.Load()
	if !ok || fs == nil {
		return nil, false
	}
	if serve, ok := c.taskServe(fs, req); ok {
		return serve, true
	}
	fc, ok := fs.g.fastCallOf(fs.profile, fs.ss, req)
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	if c.cancelled[req.ID] {
		// Cancelled in its own POST (a batch): not run, as the SDK does not run a
		// request cancelled before its handler starts; the answer is dropped.
		c.mu.Unlock()
		return func() {
			_ = c.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Error: wireError(context.Canceled)})
		}, true
	}
	return fastServer(&c.mu, c.fast, c.life, fc, func(resp *jsonrpc.Response) {
		select {
		case <-c.closed:
			return
		default:
		}
		if data, err := encodeResponse(resp); err == nil {
			_ = c.write(context.Background(), resp, data)
		}
	}), true
}

// httpTransport connects a session to its httpConn. It serves the protocol versions
// of ProtocolVersions, as the stdio front does (see directFront).
type httpTransport struct{ conn *httpConn }

func (t httpTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

func (t httpTransport) SupportsProtocolVersion(v string) bool {
	return slices.Contains(protocolVersions, v)
}

func (c *httpConn) SessionID() string { return c.id }

func (c *httpConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.incoming:
		return m, nil
	case <-c.closed:
		return nil, mcp.ErrConnectionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deliver hands a client's message to the session; false once the session is closed.
func (c *httpConn) deliver(m jsonrpc.Message) bool {
	select {
	case c.incoming <- m:
		return true
	case <-c.closed:
		return false
	}
}

// streamKey marks the context of a client's request with the stream its response goes
// to (see relatedStream).
type streamKey struct{}

// relatedStreams maps the RequestExtra of each request in flight on a Streamable HTTP
// session to its stream: RequestExtra is what a request's handler gets from the
// connection, and is unique to the request.
var relatedStreams sync.Map // *mcp.RequestExtra -> *stream

// relatedStream is a receiving middleware: it puts the stream of a Streamable HTTP
// request in its handler's context, so that what the handler sends with that context
// (progress, log messages, requests for the client's input) goes to the same stream.
func relatedStream(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ex := req.GetExtra(); ex != nil {
			if s, ok := relatedStreams.Load(ex); ok {
				ctx = context.WithValue(ctx, streamKey{}, s)
			}
		}
		return next(ctx, method, req)
	}
}

func (c *httpConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.write(ctx, msg, data)
}

// write routes msg, encoded as data (see Write).
func (c *httpConn) write(ctx context.Context, msg jsonrpc.Message, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		s := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		if c.cancelled[resp.ID] {
			delete(c.cancelled, resp.ID)
			data = nil // the client cancelled it: MCP says not to answer
		}
		if s != nil {
			s.answer(data)
		}
		return nil
	}
	req, _ := msg.(*jsonrpc.Request)
	note := req != nil && !req.IsCall()
	if c.stateless && req != nil && req.IsCall() {
		return errStateless
	}
	if s, ok := ctx.Value(streamKey{}).(*stream); ok && s.conn == c && s.open() {
		s.send(data, note)
		return nil
	}
	if s := c.listenStream(note, data); s != nil {
		s.send(data, note)
		return nil
	}
	if c.standing != nil {
		c.standing.send(data, note)
		return nil
	}
	if len(c.unsent) >= maxUnsentMessages {
		if note {
			return nil // advisory: a server's request (sampling, roots) matters more
		}
		c.unsent = c.unsent[1:]
	}
	c.unsent = append(c.unsent, data)
	return nil
}

// listenStream returns the stream a notification of a subscriptions/listen request
// (one that names its subscription in _meta) goes to on a POST's own session (MCP
// 2026-07-28, or --stateless): the POST's, which that listen keeps open. The SDK sends
// such notifications outside the listen's handler, where no stream is known, and
// there is no standing GET stream without a session. c.mu is held.
func (c *httpConn) listenStream(note bool, data []byte) *stream {
	if !c.stateless || !note || !bytes.Contains(data, []byte(mcp.MetaKeySubscriptionID)) {
		return nil
	}
	for _, s := range c.pending {
		if s.open() {
			return s
		}
	}
	return nil
}

func (c *httpConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.end()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, s := range c.pending {
			for _, ex := range s.extras {
				relatedStreams.Delete(ex)
			}
			s.wake()
		}
		for _, s := range c.streams {
			s.wake()
		}
		if c.standing != nil {
			c.standing.wake()
		}
	})
	return nil
}

// errDuplicateID is track's refusal of a request whose id is one in flight: its
// response could not be told from the other's (the SDK's handler refuses it too).
var errDuplicateID = errors.New("duplicate in-flight request ID")

// errClosing is track's refusal of a POST that comes as its session closes: what it
// registered would outlive Close's cleanup.
var errClosing = errors.New("session is closing")

// track registers the requests of a POST, with their RequestExtra, on a new stream,
// and notes the client's cancellations. It returns nil when the POST has no request.
// A POST with a request whose id is in flight (or twice in the POST) registers
// nothing: track returns the id and errDuplicateID; so does one that comes once the
// connection is closed, with errClosing.
func (c *httpConn) track(msgs []jsonrpc.Message, extra func() *mcp.RequestExtra) (*stream, jsonrpc.ID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed: // (Close cleans up under c.mu, after closing c.closed)
		return nil, jsonrpc.ID{}, errClosing
	default:
	}
	seen := map[jsonrpc.ID]bool{}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if c.pending[req.ID] != nil || seen[req.ID] {
				return nil, req.ID, errDuplicateID
			}
			seen[req.ID] = true
		}
	}
	var s *stream
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		ex := extra()
		req.Extra = ex
		if !req.IsCall() {
			if req.Method == "notifications/cancelled" {
				c.cancel(req.Params)
			}
			continue
		}
		if s == nil {
			c.seq++
			s = &stream{conn: c, id: strconv.Itoa(c.seq), notify: make(chan struct{}, 1)}
		}
		s.requests++
		s.pendingIDs = append(s.pendingIDs, req.ID)
		s.extras = append(s.extras, ex)
		relatedStreams.Store(ex, s)
		c.pending[req.ID] = s
	}
	return s, jsonrpc.ID{}, nil
}

// cancel notes a client's notifications/cancelled: the request's response is dropped,
// and the stream waiting for it no longer does.
func (c *httpConn) cancel(params json.RawMessage) {
	if id, ok := cancelledRequest(params); ok && c.pending[id] != nil {
		c.cancelled[id] = true
		if cancel := c.fast[id]; cancel != nil {
			cancel()
		}
	}
}

// keep makes s resumable (or keeps it), forgetting the oldest finished streams other
// than s past maxReplayStreams or maxReplaySessionBytes. conn.mu is held.
func (c *httpConn) keep(s *stream) {
	if _, ok := c.streams[s.id]; !ok {
		c.streams[s.id] = s
		c.order = append(c.order, s.id)
	}
	// The oldest finished streams go first; one still waiting for answers (a long
	// call) stays, without keeping those after it.
	for len(c.order) > maxReplayStreams || c.kept > maxReplaySessionBytes {
		i := slices.IndexFunc(c.order, func(id string) bool { return id != s.id && c.streams[id].finished() })
		if i < 0 {
			break
		}
		c.kept -= c.streams[c.order[i]].bytes
		delete(c.streams, c.order[i])
		c.order = slices.Delete(c.order, i, i+1)
	}
}

// stream is where the messages for one POST's requests (or the GET stream's) go, in
// order, until every request is answered.
type stream struct {
	conn       *httpConn
	id         string
	notify     chan struct{} // signalled when queue grows or the stream ends
	requests   int           // requests not answered yet
	pendingIDs []jsonrpc.ID
	extras     []*mcp.RequestExtra
	standing   bool // the GET stream: never finishes while the session lives

	// guarded by conn.mu:
	// other, while a POST serves its one request itself (see serveInline), is called
	// once, when a message other than the answer is sent: a writer must start.
	other  func()
	queue  [][]byte // messages not written yet; nil entries are answers not sent
	events [][]byte // the newest events written, for replay (when resumable)
	base   int      // the index of the event before events[0]: events[i] is event base+i+1
	bytes  int      // of events
	gen    int      // the generation of the writer serving it (see attach)
	gone   bool     // the stream was abandoned: no writer will come back
	// detached: the writer of a resumable stream lost its client; until one resumes
	// it, messages are recorded as events at once (bounded by maxReplayBytes) rather
	// than queued for a writer that may never come.
	detached bool
}

// open reports whether messages sent on s can still reach its client. conn.mu is held.
func (s *stream) open() bool { return !s.gone && (s.standing || s.requests > 0) }

// finished reports whether every message of s has been written. conn.mu is held.
func (s *stream) finished() bool { return !s.standing && s.requests == 0 && len(s.queue) == 0 }

// send queues a message. A notification (note) that finds maxUnsentMessages queued
// is dropped: the client does not read its stream (its writer is blocked), and
// progress and log messages are advisory, as for the messages held without a GET
// stream. conn.mu is held.
func (s *stream) send(data []byte, note bool) {
	if s.detached {
		s.recordLocked([][]byte{data})
		return
	}
	if note && len(s.queue) >= maxUnsentMessages {
		return
	}
	s.queue = append(s.queue, data)
	if f := s.other; f != nil {
		s.other = nil
		f()
	}
	s.wake()
}

// answer queues the response to one of s's requests (nil when it is not to be sent).
// conn.mu is held.
func (s *stream) answer(data []byte) {
	s.requests--
	switch {
	case s.detached:
		if data != nil {
			s.recordLocked([][]byte{data})
		}
	default:
		s.queue = append(s.queue, data)
	}
	if s.requests == 0 {
		for _, ex := range s.extras {
			relatedStreams.Delete(ex)
		}
		s.extras = nil
	}
	s.wake()
}

func (s *stream) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// take returns the messages queued on s for the writer of generation gen, and whether
// s is finished once they are written; replaced when another writer took s over. When
// record is set, the messages are recorded as s's next events (for replay) at once, so
// that a client resuming meanwhile finds them in the replay or in the queue.
func (s *stream) take(gen int, record bool) (msgs [][]byte, first int, done, replaced bool) {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	if s.gen != gen {
		return nil, 0, false, true
	}
	for _, m := range s.queue {
		if m != nil {
			msgs = append(msgs, m)
		}
	}
	s.queue = nil
	first = s.base + len(s.events) + 1
	if record {
		s.recordLocked(msgs)
	}
	return msgs, first, !s.standing && s.requests == 0, false
}

// record records messages as s's next events; recordLocked with conn.mu held.
func (s *stream) record(msgs [][]byte) {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	s.recordLocked(msgs)
}

func (s *stream) recordLocked(msgs [][]byte) {
	if len(msgs) == 0 {
		return
	}
	c := s.conn
	for _, m := range msgs {
		s.events = append(s.events, m)
		s.bytes += len(m)
		c.kept += len(m)
	}
	for s.bytes > maxReplayBytes && len(s.events) > 1 {
		s.bytes -= len(s.events[0])
		c.kept -= len(s.events[0])
		s.events[0] = nil
		s.events = s.events[1:]
		s.base++
	}
	c.keep(s)
}

// resumable keeps s for clients that resume it.
func (s *stream) resumable() {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	s.conn.keep(s)
}

// since returns the events after event idx, false when they are no longer kept.
// conn.mu is held.
func (s *stream) since(idx int) ([][]byte, bool) {
	if idx < s.base || idx > s.base+len(s.events) {
		return nil, false
	}
	return slices.Clone(s.events[idx-s.base:]), true
}

// attach makes a new writer (a POST, or a GET resuming s) the one serving s, and
// returns its generation: a writer that lost its client is replaced.
func (s *stream) attach() int {
	s.conn.mu.Lock()
	defer s.conn.mu.Unlock()
	s.gen++
	return s.gen
}

// abandon gives up s when writer gen's client went away without the answers: unless
// s is resumable, they are dropped as they come.
func (s *stream) abandon(gen int, resumable bool) {
	c := s.conn
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.gen != gen {
		return // another writer serves s now
	}
	if resumable {
		// A client may resume s: what it has not been sent becomes events to replay.
		s.detached = true
		var msgs [][]byte
		for _, m := range s.queue {
			if m != nil {
				msgs = append(msgs, m)
			}
		}
		s.queue = nil
		s.recordLocked(msgs)
		return
	}
	s.gone = true
	s.queue = nil
	for _, id := range s.pendingIDs {
		if c.pending[id] == s {
			c.cancelled[id] = true
		}
	}
}
