package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

// streamableFront serves MCP's Streamable HTTP transport: protocols 2025-03-26 to
// 2025-11-25 on httpConn sessions (see httpconn.go), and 2026-07-28, which has no
// sessions, on a session per POST (see streamable_era.go). Its answers to bad requests
// are the SDK handler's, status and text, so that clients see no difference.
type streamableFront struct {
	g        *Gateway
	sessions *httpSessions
	maxBody  int64
	idle     time.Duration // 0: sessions never time out
	// replica prefixes the session ids this front issues ("replica."), so that a
	// balancer can send each session's requests to the replica that owns it.
	replica string
	// stateless serves every POST with a session of its own (HTTPOptions.Stateless).
	stateless bool

	mu   sync.Mutex
	live map[string]*httpSession
}

// httpSession is one live Streamable HTTP session.
type httpSession struct {
	conn *httpConn
	ss   *mcp.ServerSession

	mu    sync.Mutex
	posts int         // POSTs being served
	idle  *time.Timer // closes the session when no POST came for the idle timeout
	d     time.Duration
	ended bool // the session ended: the timer stays stopped
}

// primeDelay is how long a POST with one request waits for its response before it
// answers with an event stream (see httpconn.go): long enough for the calls that need
// no stream (toolshed's own tools answer in well under a millisecond, most servers'
// tools in a few) even on a loaded machine, short enough that a client that loses its
// connection during a long call has the priming event to resume from. (Settable by
// the tests.)
var primeDelay atomic.Int64 // time.Duration

func init() { primeDelay.Store(int64(20 * time.Millisecond)) }

// primingVersion is the first protocol whose clients expect priming events (SEP-1699).
const primingVersion = "2025-11-25"

func newStreamableFront(g *Gateway, sessions *httpSessions, maxBody int64, idle time.Duration) *streamableFront {
	return &streamableFront{g: g, sessions: sessions, maxBody: maxBody, idle: idle, live: map[string]*httpSession{}}
}

// newID returns a new session id: random, after the replica's name when it has one.
func (h *streamableFront) newID() string {
	if h.replica != "" {
		return h.replica + "." + rand.Text()
	}
	return rand.Text()
}

// serve serves one request of a client that carries credential cred as profile.
func (h *streamableFront) serve(w http.ResponseWriter, r *http.Request, cred credential, profile string) {
	// MCP-Protocol-Version, when sent, must be a version toolshed speaks. A POST
	// without a session that names a later one (or one that is no date, which sorts
	// after every date) is a client of a later protocol: it is refused in that
	// protocol's terms, which name the versions toolshed speaks (see modernPOST).
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(protocolVersions, v) &&
		(v < modernProtocol || r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "") {
		http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version (supported versions: %s)", strings.Join(protocolVersions, ",")), http.StatusBadRequest)
		return
	}
	if h.stateless {
		h.serveStateless(w, r, sessionOwner{cred, profile})
		return
	}
	if r.Method != http.MethodPost && modernVersion(r.Header.Get("Mcp-Protocol-Version")) {
		// MCP 2026-07-28 has no sessions to stream from or end: its POSTs are all.
		w.Header().Set("Allow", "POST")
		http.Error(w, fmt.Sprintf("Method Not Allowed: MCP %s has no sessions; send each request as a POST", r.Header.Get("Mcp-Protocol-Version")), http.StatusMethodNotAllowed)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePOST(w, r, sessionOwner{cred, profile})
	case http.MethodGet:
		h.serveGET(w, r, sessionOwner{cred, profile})
	case http.MethodDelete:
		h.serveDELETE(w, r, sessionOwner{cred, profile})
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// lookup returns the session a request names, answering 404 when it is not live or
// not its owner's: a session id used with another token or profile is unknown.
func (h *streamableFront) lookup(w http.ResponseWriter, id string, owner sessionOwner) *httpSession {
	h.mu.Lock()
	sess := h.live[id]
	h.mu.Unlock()
	if sess == nil || !h.sessions.owns(id, owner.cred, owner.profile) {
		http.Error(w, "session not found", http.StatusNotFound)
		return nil
	}
	return sess
}

// named returns the session a GET or DELETE names, answering 400 when it names none
// and 404 when it is not live or not owner's.
func (h *streamableFront) named(w http.ResponseWriter, r *http.Request, owner sessionOwner) *httpSession {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		http.Error(w, fmt.Sprintf("Bad Request: %s requires an Mcp-Session-Id header", r.Method), http.StatusBadRequest)
		return nil
	}
	return h.lookup(w, id, owner)
}

// open starts a session for owner, in a slot reserved for it.
func (h *streamableFront) open(ctx context.Context, owner sessionOwner) (*httpSession, error) {
	id := h.newID()
	conn := newHTTPConn(id)
	// Bound before the client can learn the id.
	h.sessions.bind(id, owner)
	ss, err := h.g.mcpServerFor(owner.profile).Connect(context.WithoutCancel(ctx), httpTransport{conn}, nil)
	if err != nil {
		h.sessions.forget(id)
		return nil, err
	}
	conn.serveFast(h.g, owner.profile, ss)
	sess := &httpSession{conn: conn, ss: ss, d: h.idle}
	if h.idle > 0 {
		sess.idle = time.AfterFunc(h.idle, func() { ss.Close() })
	}
	h.mu.Lock()
	h.live[id] = sess
	h.mu.Unlock()
	go func() {
		ss.Wait()
		conn.Close()
		sess.end()
		h.mu.Lock()
		delete(h.live, id)
		h.mu.Unlock()
		h.sessions.forget(id)
	}()
	return sess, nil
}

// startPOST and endPOST keep the idle timer off while a POST is served: a session
// times out only after its last request ended, as with the SDK.
func (s *httpSession) startPOST() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.posts++; s.idle != nil {
		s.idle.Stop()
	}
}

func (s *httpSession) endPOST() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.posts--; s.posts == 0 && s.idle != nil && !s.ended {
		s.idle.Reset(s.d)
	}
}

// end stops the idle timer for good once the session ended: a POST that ends after
// would otherwise arm it again, and it would hold the session until it fired.
func (s *httpSession) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	if s.idle != nil {
		s.idle.Stop()
	}
}

// post is a POST's messages, read and checked.
type post struct {
	msgs        []jsonrpc.Message
	batch       bool   // the body is a JSON-RPC batch
	version     string // the protocol version: the header's, or an initialize's
	initialize  bool   // the POST carries an initialize request
	initialized bool   // and a notifications/initialized
}

// postHeadersOK checks the headers of a POST, answering the client when they are
// not acceptable.
func postHeadersOK(w http.ResponseWriter, r *http.Request) bool {
	if len(r.Header.Values("Last-Event-ID")) > 0 {
		http.Error(w, "can't send Last-Event-ID for POST request", http.StatusBadRequest)
		return false
	}
	if jsonOK, streamOK := accepts(r.Header.Values("Accept")); !jsonOK || !streamOK {
		http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
		return false
	}
	return true
}

// readPOST reads and checks the messages of a POST, answering the client when they
// are not acceptable (false).
func (h *streamableFront) readPOST(w http.ResponseWriter, r *http.Request) (post, bool) {
	var p post
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return p, false
		}
		// Such as a body that did not arrive in time.
		httpError(w, http.StatusBadRequest, "cannot read the request body: %v", err)
		return p, false
	}
	if len(body) == 0 {
		http.Error(w, "POST requires a non-empty body", http.StatusBadRequest)
		return p, false
	}
	if p.msgs, err = decodeMessages(body); err != nil {
		http.Error(w, fmt.Sprintf("malformed payload: %v", err), http.StatusBadRequest)
		return p, false
	}
	p.version = r.Header.Get("Mcp-Protocol-Version")
	p.batch = body[jsonscan.SkipSpace(body, 0)] == '['
	if p.batch && p.version >= "2025-06-18" {
		http.Error(w, fmt.Sprintf("JSON-RPC batching is not supported in 2025-06-18 and later (request version: %s)", p.version), http.StatusBadRequest)
		return p, false
	}
	for _, m := range p.msgs {
		req, ok := m.(*jsonrpc.Request)
		switch {
		case !ok:
		case req.Method == "initialize":
			p.initialize = true
			var params struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(req.Params, &params) == nil && params.ProtocolVersion != "" {
				p.version = params.ProtocolVersion
			}
		case req.Method == "notifications/initialized":
			p.initialized = true
		}
	}
	return p, true
}

func (h *streamableFront) servePOST(w http.ResponseWriter, r *http.Request, owner sessionOwner) {
	if !postHeadersOK(w, r) {
		return
	}
	var sess *httpSession
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		if sess = h.lookup(w, id, owner); sess == nil {
			return
		}
	}
	p, ok := h.readPOST(w, r)
	if !ok {
		return
	}
	msgs, version, batch, initialize := p.msgs, p.version, p.batch, p.initialize
	var err error
	if sess == nil {
		// A POST without a session starts one, for an initialize (or a probe before
		// it, whose session ends with the POST), unless it speaks the modern protocol,
		// which has no sessions (see streamable_era.go).
		if v, ok := h.modernPOST(w, r, p, owner.profile); !ok {
			return
		} else if v != "" {
			h.servePerPOST(w, r, owner, p, v)
			return
		}
		if h.g.refuseDraining(w) {
			return
		}
		if err := h.sessions.reserve(owner.cred); err != nil {
			w.Header().Set("Retry-After", sessionRetryAfter)
			httpError(w, http.StatusServiceUnavailable, "%v", err)
			return
		}
		if sess, err = h.open(r.Context(), owner); err != nil {
			// open gave the slot back.
			h.g.logf("http: cannot start a session: %v", err)
			http.Error(w, "failed connection", http.StatusInternalServerError)
			return
		}
		defer func() {
			// The session lives on only if its client learnt its id: the answer to
			// its initialize names it (Mcp-Session-Id), nothing else does.
			if !initialize || sess.ss.InitializeParams() == nil {
				sess.ss.Close()
				// At once, as DELETE does, not when the session's cleanup runs: the
				// client's next request (its initialize, after a probe) may come first
				// and be refused for the caps.
				h.sessions.forget(sess.conn.id)
			}
		}()
	}
	// A listen on a session's POST holds its connection as a modern client's does.
	release, ok := h.holdListen(w, p, owner.cred)
	if !ok {
		return
	}
	defer release()
	sess.startPOST()
	var ended sync.Once
	endPOST := func() { ended.Do(sess.endPOST) }
	defer endPOST()

	s, dup, err := sess.conn.track(msgs, func() *mcp.RequestExtra { return &mcp.RequestExtra{Header: r.Header} })
	if errors.Is(err, errClosing) {
		http.Error(w, "session is closing", http.StatusNotFound)
		return
	}
	if err != nil {
		writeDuplicate(w, dup, err)
		return
	}
	if s == nil {
		// Notifications and responses only: accepted, nothing to answer.
		for _, m := range msgs {
			if !sess.conn.deliver(m) {
				http.Error(w, "session is closing", http.StatusNotFound)
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if initialize {
		w.Header().Set("Mcp-Session-Id", sess.conn.id)
	}
	single := s.requests == 1 && !batch
	sw := streamWriter{json: single, prime: version >= primingVersion}
	if single && len(msgs) == 1 {
		if serve, ok := sess.conn.fastServe(msgs[0]); ok {
			h.serveInline(w, r, s, sw, serve, endPOST)
			return
		}
	}
	for _, m := range msgs {
		if sess.conn.tryFast(m) {
			continue
		}
		if !sess.conn.deliver(m) {
			s.abandon(s.gen, false)
			http.Error(w, "session is closing", http.StatusNotFound)
			return
		}
	}
	h.write(w, r, s, s.attach(), sw)
}

// serveInline serves a POST whose one request is a tools/call the fast path takes
// (serve) on the POST's own goroutine, which then writes the answer: the call is not
// handed to a goroutine of its own and its answer back, the two hand-offs that cost an
// HTTP call the most after its system calls. A writer of the stream (write) starts on
// a goroutine of its own only if the response cannot wait for the answer: when the
// call sends something else first (progress, a log message, a request for the
// client's input, which it may wait on), or when primeDelay passes; the POST's
// goroutine then waits for that writer. When that writer gives up (the client went
// away, another writer took the stream over, the session ended) while the call runs,
// the POST is over for the session (endPOST), as when the call runs elsewhere: its
// idle timeout counts again, and ends a session whose client does not come back, and
// the call with it.
func (h *streamableFront) serveInline(w http.ResponseWriter, r *http.Request, s *stream, sw streamWriter, serve, endPOST func()) {
	gen := s.attach()
	var (
		once   sync.Once
		writer chan struct{} // closed when the writer started is done; nil if none
	)
	start := func() {
		once.Do(func() {
			writer = make(chan struct{})
			go func() {
				defer close(writer)
				if !h.write(w, r, s, gen, streamWriter{prime: sw.prime}) {
					endPOST()
				}
			}()
		})
	}
	var timer *time.Timer
	if sw.json && !sw.hold {
		timer = time.AfterFunc(time.Duration(primeDelay.Load()), start)
	}
	s.conn.mu.Lock()
	s.other = start
	s.conn.mu.Unlock()

	serve()

	if timer != nil {
		timer.Stop()
	}
	s.conn.mu.Lock()
	s.other = nil
	s.conn.mu.Unlock()
	once.Do(func() {}) // no writer starts from here on
	if writer != nil {
		<-writer
		return
	}
	// The answer is queued: written as the POST's writer writes it, without waiting.
	sw.hold = true
	h.write(w, r, s, gen, sw)
}

// writeDuplicate refuses a POST with a request whose id is in flight, as the SDK's
// handler does.
func writeDuplicate(w http.ResponseWriter, dup jsonrpc.ID, err error) {
	writeJSONRPCError(w, http.StatusBadRequest, dup, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("%v %v", err, dup.Raw())})
}

// streamWriter says how a stream is written to one response.
type streamWriter struct {
	json bool // the response may be application/json: one request, answered at once
	// hold keeps json until a message other than the answer comes, however long the
	// answer takes: a stream that cannot be resumed has no priming event to send.
	hold    bool
	prime   bool // the stream is resumable: it starts with a priming event, its events have IDs
	started bool // the event stream's headers are written
	// modern answers a JSON-RPC error with the HTTP status MCP 2026-07-28 gives it
	// (see errorStatus), when the answer is not an event stream.
	modern bool
	// listen is the stream of a subscriptions/listen POST, which has no answer but
	// its client's going: it ends when the gateway drains or stops, as a GET stream
	// does when it stops, rather than hold the drain for its whole timeout.
	listen bool
}

// write writes s's messages to w until s is finished, the client goes away, another
// writer takes s over or the session ends.
// gen is the writer's generation, from stream.attach. It reports whether s finished:
// every answer written.
func (h *streamableFront) write(w http.ResponseWriter, r *http.Request, s *stream, gen int, sw streamWriter) bool {
	rc := http.NewResponseController(w)
	var wait <-chan time.Time
	if sw.json && !sw.hold {
		t := time.NewTimer(time.Duration(primeDelay.Load()))
		defer t.Stop()
		wait = t.C
	}
	start := func() {
		sw.started = true
		startEventStream(w)
		if sw.prime {
			s.resumable()
			fmt.Fprintf(w, "event: prime\nid: %s_0\ndata: \n\n", s.id)
		}
	}
	closing := false
	life := h.g.life.Done()
	var drain <-chan struct{}
	if sw.listen {
		drain = h.g.drainSignal()
	}
	for {
		if !sw.json && !sw.started {
			start()
			rc.Flush()
		}
		select {
		case <-s.notify:
		case <-wait:
			sw.json, wait = false, nil
			continue
		case <-r.Context().Done():
			s.abandon(gen, sw.prime && sw.started)
			return false
		case <-s.conn.closed:
			closing = true
		case <-drain:
			s.abandon(gen, false)
			return false
		case <-life:
			// A client's standing stream waits for messages as long as its session
			// lives: it ends when the gateway stops, or it would hold a stopping
			// server's drain (http.Server.Shutdown) until its timeout. A POST's
			// stream ends with its answers, which the stop sends.
			if s.standing || sw.listen {
				return false
			}
			life = nil
			continue
		}
		resumable := sw.prime && sw.started
		msgs, first, done, replaced := s.take(gen, resumable)
		if replaced {
			s.wake() // the wake-up may have been the new writer's
			return false
		}
		if sw.json && done && len(msgs) == 1 {
			w.Header().Set("Content-Type", "application/json")
			if sw.modern {
				w.WriteHeader(answerStatus(msgs[0]))
			}
			w.Write(msgs[0])
			return true
		}
		if !sw.started && (len(msgs) > 0 || done || closing) {
			sw.json = false
			start()
			if resumable = sw.prime; resumable {
				s.record(msgs)
			}
		}
		for i, m := range msgs {
			if resumable {
				s.event(w, first+i, m)
			} else {
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", m)
			}
		}
		if done || closing {
			return done
		}
		rc.Flush()
	}
}

func (h *streamableFront) serveGET(w http.ResponseWriter, r *http.Request, owner sessionOwner) {
	if _, streamOK := accepts(r.Header.Values("Accept")); !streamOK {
		http.Error(w, "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest)
		return
	}
	sess := h.named(w, r, owner)
	if sess == nil {
		return
	}
	c := sess.conn
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		h.resume(w, r, c, last)
		return
	}
	c.mu.Lock()
	if c.standing != nil {
		c.mu.Unlock()
		http.Error(w, "stream ID conflicts with ongoing stream", http.StatusConflict)
		return
	}
	s := &stream{conn: c, standing: true, notify: make(chan struct{}, 1), queue: c.unsent}
	c.unsent = nil
	c.standing = s
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.standing == s {
			c.standing = nil
			c.unsent = s.queue // what came after the client left
		}
		c.mu.Unlock()
	}()
	startEventStream(w)
	fmt.Fprint(w, ": ok\n\n")
	s.wake()
	h.write(w, r, s, s.attach(), streamWriter{started: true})
}

// resume serves a client that lost a stream and asks for the events after the last it
// got (Last-Event-ID), then the rest of the stream.
func (h *streamableFront) resume(w http.ResponseWriter, r *http.Request, c *httpConn, last string) {
	sid, idx, ok := parseEventID(last)
	c.mu.Lock()
	s := c.streams[sid]
	var replay [][]byte
	if ok && s != nil {
		replay, ok = s.since(idx)
	}
	if !ok || s == nil {
		c.mu.Unlock()
		http.Error(w, "failed to replay events", http.StatusBadRequest)
		return
	}
	// A writer still attached lost its client without noticing yet: this one takes
	// the stream over (see stream.take), before the other can take more messages.
	s.gen++
	gen := s.gen
	s.detached = false // what comes next is this writer's to send
	c.mu.Unlock()
	startEventStream(w)
	for i, data := range replay {
		s.event(w, idx+i+1, data)
	}
	s.wake()
	h.write(w, r, s, gen, streamWriter{prime: true, started: true})
}

// startEventStream writes the headers of a server-sent event stream.
func startEventStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
}

// event writes s's event number n, whose ID ("stream_n", as the SDK writes them) a
// client resumes from.
func (s *stream) event(w io.Writer, n int, data []byte) {
	fmt.Fprintf(w, "event: message\nid: %s_%d\ndata: %s\n\n", s.id, n, data)
}

// parseEventID splits an event ID, "stream_index", as the SDK writes them.
func parseEventID(id string) (string, int, bool) {
	sid, n, ok := strings.Cut(id, "_")
	idx, err := strconv.Atoi(n)
	return sid, idx, ok && err == nil && idx >= 0
}

func (h *streamableFront) serveDELETE(w http.ResponseWriter, r *http.Request, owner sessionOwner) {
	sess := h.named(w, r, owner)
	if sess == nil {
		return
	}
	// The SDK ends a session only once its requests in flight are answered: a client
	// that ends its session would wait for every call it gave up on.
	h.g.calls.sessionGone(sess.ss)
	sess.ss.Close()
	h.g.calls.forgetSession(sess.ss)
	h.sessions.forget(sess.conn.id) // at once: the slot is free for the client's next session
	w.WriteHeader(http.StatusNoContent)
}

// accepts reports whether Accept header values accept JSON and event streams, as the
// SDK reads them.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}
