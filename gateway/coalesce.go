package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// The SDK's Streamable HTTP server flushes every server-sent event it writes: for a call,
// a priming event (the event ID a client resumes from), then the result, then net/http
// ends the chunked body: three writes to the socket, and three wake-ups of the client,
// where one carries it all. toolshed keeps the SDK's bytes and events and only holds back
// two flushes: the priming event's, for up to primeDelay (a call that takes longer gets
// it then, so it can still resume), and the final result's, which net/http then sends
// with the end of the body as the handler returns.

// primeDelay is how long the priming event may wait for the first other event.
const primeDelay = 2 * time.Millisecond

// coalescingWriter is the http.ResponseWriter the SDK writes a POST's response to.
type coalescingWriter struct {
	http.ResponseWriter
	finalID []byte // the canonical id of the POST's single call, whose result ends it

	mu      sync.Mutex
	held    bool // written but not flushed
	timer   *time.Timer
	stopped bool
}

// newCoalescingWriter wraps w for a POST whose body is body; nil when the body is not a
// single call (batches and notifications are left alone).
func newCoalescingWriter(w http.ResponseWriter, body []byte) *coalescingWriter {
	if !json.Valid(body) {
		return nil
	}
	id, method := memberValue(body, "id"), memberValue(body, "method")
	if len(id) == 0 || isNull(id) || len(method) == 0 {
		return nil
	}
	return &coalescingWriter{ResponseWriter: w, finalID: []byte(canonicalID(id))}
}

func (c *coalescingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return 0, http.ErrHandlerTimeout
	}
	n, err := c.ResponseWriter.Write(p)
	if bytes.HasPrefix(p, []byte("event: prime\n")) {
		c.held = true
		c.timer = time.AfterFunc(primeDelay, c.flushHeld)
		return n, err
	}
	if c.timer != nil {
		c.timer.Stop() // what follows the priming event carries it
	}
	c.held = c.isFinal(p)
	return n, err
}

// isFinal reports whether event is the response to the POST's call: the last event.
func (c *coalescingWriter) isFinal(event []byte) bool {
	i := bytes.Index(event, []byte("\ndata: "))
	if i < 0 || !bytes.HasPrefix(event, []byte("event: message\n")) {
		return false
	}
	data := bytes.TrimSpace(event[i+len("\ndata: "):])
	if memberValue(data, "method") != nil || (memberValue(data, "result") == nil && memberValue(data, "error") == nil) {
		return false
	}
	id := memberValue(data, "id")
	return id != nil && canonicalID(id) == string(c.finalID)
}

// FlushError flushes, unless the last write is one to hold back.
func (c *coalescingWriter) FlushError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held || c.stopped {
		return nil
	}
	return http.NewResponseController(c.ResponseWriter).Flush()
}

func (c *coalescingWriter) Flush() { _ = c.FlushError() }

// flushHeld sends a priming event no other event followed within primeDelay.
func (c *coalescingWriter) flushHeld() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held && !c.stopped {
		c.held = false
		_ = http.NewResponseController(c.ResponseWriter).Flush()
	}
}

// stop is called when the handler returns: net/http sends what is held, and the
// writer must not be touched after.
func (c *coalescingWriter) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
	}
}

// Unwrap gives http.ResponseController the SDK's other needs (deadlines).
func (c *coalescingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// readBody reads r's body, up to one byte past maxBody (the SDK answers a longer one
// 413), and puts it back as r.Body for the handlers after. When the body cannot be read,
// such as one that did not arrive in time, it answers 400 saying so (rather than pass the
// SDK half a message to call malformed) and reports false.
func readBody(w http.ResponseWriter, r *http.Request, maxBody int64) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		httpError(w, http.StatusBadRequest, "cannot read the request body: %v", err)
		return nil, false
	}
	return body, true
}

// serveCoalesced serves a POST through h with a coalescingWriter when it carries a single
// call.
func serveCoalesced(h http.Handler, w http.ResponseWriter, r *http.Request, maxBody int64) {
	if r.Method != http.MethodPost || r.Body == nil || r.ContentLength > maxBody {
		h.ServeHTTP(w, r)
		return
	}
	body, ok := readBody(w, r, maxBody)
	if !ok {
		return
	}
	if int64(len(body)) > maxBody {
		h.ServeHTTP(w, r)
		return
	}
	cw := newCoalescingWriter(w, body)
	if cw == nil {
		h.ServeHTTP(w, r)
		return
	}
	defer cw.stop()
	h.ServeHTTP(cw, r)
}
