package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

// toolshed's stdio connections, to its client and to its upstream servers, read each
// message with one validation pass and a walk of the envelope's members. The SDK's own
// stdio connection decodes every message twice (as a batch, then as a message), each time
// with a decoder that allocates a 32 KiB buffer; on a tool call that crosses two stdio
// connections, that garbage was most of the gateway's garbage-collection time. Anything
// unusual (a batch, an error member, an odd id) is decoded by the SDK, as before.

// maxLineLength bounds one message, as the SDK's DefaultMaxLineLength does.
const maxLineLength = mcp.DefaultMaxLineLength

// lineConn is an mcp.Connection over newline-delimited JSON-RPC (MCP's stdio transport).
// Batches are read, their messages one by one; on the connection to toolshed's own
// client they are answered with an array, or refused, as the session's protocol
// version says (see batching; MCP dropped batches in 2025-06-18).
type lineConn struct {
	w       io.Writer
	closeIO func() error
	// route, when set before the first Read, sees each message first, on the reading
	// goroutine; what it handles (reports true for) is not returned by Read.
	route func(jsonrpc.Message) bool
	// pace, when set before the first Read, is called before each line is read, and
	// waits until there is room for another message (see stdioConn.waitOpen); false
	// ends reading, the connection having closed.
	pace func() bool
	// batching, when set before the first Read (on the connection to toolshed's own
	// client), reports whether the client's session speaks a protocol version with
	// JSON-RPC batches, and which version it speaks: a batch is then answered with an
	// array, and otherwise refused (see readBatch).
	batching func() (ok bool, version string)
	batchMu  sync.Mutex
	batches  map[jsonrpc.ID]*batch // by the id of each request of a batch not answered yet
	// answerBad, set before the first Read on the connection to toolshed's own client,
	// answers a line that is not a JSON-RPC message with a JSON-RPC error (see
	// answerBadLine) and reads on. Otherwise such a line ends the connection, as it
	// does in the SDK: an upstream writing garbage is restarted.
	answerBad bool
	// handed is what route handed off (see handOff); only the reading goroutine
	// touches it.
	handed func()
	// spare is where a goroutine that ran a handed-off call waits to read on, and
	// parked whether one waits (see park).
	spare  chan struct{}
	parked atomic.Bool
	r      *bufio.Reader
	start  sync.Once

	writeMu  sync.Mutex
	wbuf     []byte
	incoming chan readResult
	queue    []jsonrpc.Message // the rest of a batch
	closed   chan struct{}
	once     sync.Once
	closeErr error
}

type readResult struct {
	msgs []jsonrpc.Message
	err  error
}

// newLineConn reads messages from r and writes them to w; closeIO ends both.
func newLineConn(r io.Reader, w io.Writer, closeIO func() error) *lineConn {
	return &lineConn{w: w, closeIO: closeIO, r: bufio.NewReaderSize(r, 64<<10), incoming: make(chan readResult), closed: make(chan struct{}), spare: make(chan struct{})}
}

// readLoop reads messages until reading fails or the connection is closed. It has a
// goroutine of its own, so that Close unblocks Read even when the underlying read (of
// stdin) does not end when closed; the SDK does the same.
func (c *lineConn) readLoop() {
	for {
		if c.pace != nil && !c.pace() {
			return
		}
		line, err := readLine(c.r, c.answerBad)
		var res readResult
		switch {
		case err == errLineTooLong && c.answerBad:
			c.answerBadLine(nil, err)
			continue
		case err != nil:
			res.err = err
		case len(line) == 0:
			continue // blank line between messages
		default:
			res.msgs, res.err = decodeMessages(line)
			if res.err != nil && c.answerBad {
				c.answerBadLine(line, res.err)
				continue
			}
			if res.err == nil && c.batching != nil && isBatch(line) && !c.readBatch(res.msgs) {
				continue
			}
		}
		if c.route != nil {
			kept := res.msgs[:0]
			for _, m := range res.msgs {
				if !c.route(m) {
					kept = append(kept, m)
				}
			}
			if f := c.handed; f != nil {
				c.handed = nil
				if len(kept) == 0 && res.err == nil {
					c.readOn()
					f()
					if c.park() {
						continue
					}
					return
				}
				go f() // the rest of a batch is to be passed on first
			}
			if res.msgs = kept; len(kept) == 0 && res.err == nil {
				continue
			}
		}
		select {
		case c.incoming <- res:
		case <-c.closed:
			return
		}
		if res.err != nil {
			return
		}
	}
}

// handOff, called by route, has the reading goroutine run f once the message is
// routed, while reading goes on on another goroutine (readOn): a client's call then
// runs at once, on a goroutine whose stack has grown already, instead of waiting for
// the reader to find nothing more to read and park (see fastcall.go).
func (c *lineConn) handOff(f func()) {
	if c.handed != nil {
		go c.handed() // a batch with several
	}
	c.handed = f
}

// readOn has another goroutine read on: the spare one (see park), or a new one.
func (c *lineConn) readOn() {
	if c.parked.CompareAndSwap(true, false) {
		select {
		case c.spare <- struct{}{}:
		case <-c.closed:
		}
		return
	}
	go c.readLoop()
}

// park makes the calling goroutine, done with a handed-off call, the spare one, and
// reports whether it is to read on; false when one is spare already or the connection
// closed. The spare goroutine's stack has grown already: a new goroutine's would grow
// again, copied at each step, through the decoding of the next message and the
// validation of the next call's arguments.
func (c *lineConn) park() bool {
	if !c.parked.CompareAndSwap(false, true) {
		return false
	}
	select {
	case <-c.spare:
		return true
	case <-c.closed:
		return false
	}
}

// readLine returns the next line without its line ending, in a slice of its own.
// A line longer than maxLineLength is errLineTooLong; with skipLong, the rest of it is
// read and dropped first, so that the next read starts at the next line.
func readLine(r *bufio.Reader, skipLong bool) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLineLength {
			if skipLong && err == bufio.ErrBufferFull {
				if err := skipLine(r); err != nil {
					return nil, err
				}
			}
			return nil, errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				break // a last message without newline
			}
			return nil, err
		}
		break
	}
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line, nil
}

// errLineTooLong is the error of a line longer than maxLineLength.
var errLineTooLong = fmt.Errorf("a message is longer than %d bytes", maxLineLength)

// skipLine reads past the end of the current line.
func skipLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

// answerBadLine answers a line that is not a JSON-RPC message, as JSON-RPC 2.0 says: a
// parse error (-32700) when it is not JSON, an invalid request (-32600) when it is JSON
// but not a message MCP can read, with the request's id when one can be read from it
// and null otherwise. Nothing else happens: the next line is read as if this one had
// not come. line is nil for a line too long to read.
func (c *lineConn) answerBadLine(line []byte, err error) {
	code, msg := int64(jsonrpc.CodeInvalidRequest), "Invalid Request: "
	switch {
	case line == nil:
		msg += err.Error() + "; send smaller messages"
	case !json.Valid(line):
		code, msg = jsonrpc.CodeParseError, "Parse error: the line is not JSON; send one JSON-RPC 2.0 message per line"
	default:
		msg += err.Error() + `; send a JSON-RPC 2.0 message, such as {"jsonrpc":"2.0","id":1,"method":"ping"}`
	}
	// An error about a message whose id cannot be read has no id. JSON-RPC 2.0 would
	// have "id": null, but MCP's schema makes an error's id optional and a string or a
	// number, and the TypeScript SDK's clients refuse null (and so end the connection).
	var id json.RawMessage
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	if line != nil && json.Unmarshal(line, &env) == nil {
		if isID(env.ID) {
			id = env.ID
		}
	}
	c.writeError(id, code, msg)
}

// writeError writes a JSON-RPC error with id (none when nil).
func (c *lineConn) writeError(id json.RawMessage, code int64, msg string) {
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		return
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.w.Write(append(data, '\n'))
}

// isID reports whether raw can be a JSON-RPC request's id: a string or a number.
func isID(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// isBatch reports whether a valid JSON line is a batch (an array).
func isBatch(line []byte) bool {
	i := jsonscan.SkipSpace(line, 0)
	return i < len(line) && line[i] == '['
}

// batch is a JSON-RPC batch of the client's whose requests are not all answered:
// their answers, in the batch's order, are written together, as one array, once the
// last is in (JSON-RPC 2.0; MCP 2025-03-26 requires a server to take batches).
type batch struct {
	index   map[jsonrpc.ID]int // the place of each request's answer
	answers [][]byte           // nil for a request not answered yet, or whose answer is dropped
	left    int
}

// readBatch takes a batch of the client's, msgs, and reports whether its messages are
// to be served: when the session speaks a protocol version with batches, their
// answers are collected (see answer); otherwise every request of it is refused with a
// JSON-RPC error that says why, under its own id, so that no client waits for an
// answer that never comes.
func (c *lineConn) readBatch(msgs []jsonrpc.Message) bool {
	ok, version := c.batching()
	var ids []jsonrpc.ID
	for _, m := range msgs {
		if r, isReq := m.(*jsonrpc.Request); isReq && r.IsCall() {
			ids = append(ids, r.ID)
		}
	}
	why := ""
	switch {
	case !ok:
		why = fmt.Sprintf("JSON-RPC batches are not part of MCP 2025-06-18 and later, and this session speaks %s; send each message on a line of its own", version)
	case len(ids) == 0:
		return true // notifications and responses: nothing to answer
	default:
		c.batchMu.Lock()
		b := &batch{index: make(map[jsonrpc.ID]int, len(ids)), answers: make([][]byte, len(ids)), left: len(ids)}
		for i, id := range ids {
			if _, dup := b.index[id]; dup || c.batches[id] != nil {
				why = fmt.Sprintf("the batch has a request id (%v) that another request of it, or of a batch still running, has; give each request an id of its own", id.Raw())
				break
			}
			b.index[id] = i
		}
		if why == "" {
			if c.batches == nil {
				c.batches = map[jsonrpc.ID]*batch{}
			}
			for _, id := range ids {
				c.batches[id] = b
			}
		}
		c.batchMu.Unlock()
		if why == "" {
			return true
		}
		ids = nil // the ids are ambiguous: one error, without an id
	}
	msg := "Invalid Request: " + why
	if len(ids) == 0 {
		c.writeError(nil, jsonrpc.CodeInvalidRequest, msg)
	}
	for _, id := range ids {
		raw, _ := json.Marshal(id.Raw())
		c.writeError(raw, jsonrpc.CodeInvalidRequest, msg)
	}
	return false
}

// answer writes the answer (encoded) to the client's request id: as a line of its own,
// or, for a request of a batch, into the batch's array, written once the batch's last
// answer is in. data nil drops the answer (a cancelled request's) from its batch.
func (c *lineConn) answer(id jsonrpc.ID, data []byte) error {
	c.batchMu.Lock()
	b := c.batches[id]
	if b == nil {
		c.batchMu.Unlock()
		if data == nil {
			return nil
		}
		return c.writeLine(data)
	}
	delete(c.batches, id)
	b.answers[b.index[id]] = data
	b.left--
	done := b.left == 0
	c.batchMu.Unlock()
	if !done {
		return nil
	}
	var out []byte
	for _, a := range b.answers {
		if a == nil {
			continue
		}
		if out == nil {
			out = append(out, '[')
		} else {
			out = append(out, ',')
		}
		out = append(out, a...)
	}
	if out == nil {
		return nil // every answer dropped: JSON-RPC writes nothing then
	}
	return c.writeLine(append(out, ']'))
}

// decodeMessages decodes one line: a message or a batch.
func decodeMessages(line []byte) ([]jsonrpc.Message, error) {
	if !json.Valid(line) {
		return nil, fmt.Errorf("invalid JSON-RPC message: %.200s", line)
	}
	if i := jsonscan.SkipSpace(line, 0); i < len(line) && line[i] == '[' {
		var msgs []jsonrpc.Message
		var err error
		jsonscan.Elements(line, func(elem []byte) {
			if err != nil {
				return
			}
			var m jsonrpc.Message
			if m, err = jsonrpc.DecodeMessage(elem); err == nil {
				msgs = append(msgs, m)
			}
		})
		if err == nil && len(msgs) == 0 {
			err = errors.New("empty batch")
		}
		return msgs, err
	}
	m, err := decodeMessage(line)
	if err != nil {
		return nil, err
	}
	return []jsonrpc.Message{m}, nil
}

// decodeMessage decodes one valid JSON-RPC message as jsonrpc.DecodeMessage does, walking
// its members instead of decoding them; what it does not handle here goes to the SDK.
func decodeMessage(msg []byte) (jsonrpc.Message, error) {
	var version, id, method, params, result []byte
	sdk := false
	jsonscan.Members(msg, func(key string, val []byte) bool {
		switch key {
		case "jsonrpc":
			version = val
		case "id":
			id = val
		case "method":
			method = val
		case "params":
			params = val
		case "result":
			result = val
		case "error":
			sdk = !isNull(val) // a wire error: rare, and the SDK's type to decode
		}
		return !sdk
	})
	if sdk || string(version) != `"2.0"` {
		return jsonrpc.DecodeMessage(msg)
	}
	var rid jsonrpc.ID
	switch {
	case len(id) == 0 || isNull(id):
	case id[0] == '"':
		rid, _ = jsonrpc.MakeID(jsonscan.Unquote(id))
	default:
		f, err := strconv.ParseFloat(string(id), 64)
		if err != nil {
			return jsonrpc.DecodeMessage(msg)
		}
		rid, _ = jsonrpc.MakeID(f)
	}
	if method != nil {
		if method[0] != '"' {
			return jsonrpc.DecodeMessage(msg)
		}
		return &jsonrpc.Request{ID: rid, Method: jsonscan.Unquote(method), Params: params}, nil
	}
	if !rid.IsValid() {
		return jsonrpc.DecodeMessage(msg)
	}
	return &jsonrpc.Response{ID: rid, Result: result}, nil
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.start.Do(func() { go c.readLoop() })
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.incoming:
		if r.err != nil || len(r.msgs) == 0 {
			return nil, r.err
		}
		c.queue = r.msgs[1:]
		return r.msgs[0], nil
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && c.batching != nil {
		return c.answer(resp.ID, data)
	}
	return c.writeLine(data)
}

// writeLine writes one encoded message and its newline, in one write.
func (c *lineConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.wbuf = append(append(c.wbuf[:0], data...), '\n')
	_, err := c.w.Write(c.wbuf)
	return err
}

func (c *lineConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.closeErr = c.closeIO()
	})
	return c.closeErr
}

func (c *lineConn) SessionID() string { return "" }

// stdioTransport serves toolshed's own client over stdin and stdout. Its zero value is
// the real stdio; the tests set r, w and closeIO to drive the same front over pipes.
type stdioTransport struct {
	r       io.Reader
	w       io.Writer
	closeIO func() error
}

func (t stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	r, w, closeIO := t.r, t.w, t.closeIO
	if r == nil {
		r, w, closeIO = os.Stdin, os.Stdout, os.Stdin.Close
	}
	c := newLineConn(r, w, closeIO)
	c.answerBad = true
	return c, nil
}

// commandTransport starts an upstream server and talks to it over its stdin and stdout,
// as mcp.CommandTransport does: closing the connection closes its stdin, then, if it
// has not exited within terminate, sends SIGTERM, then SIGKILL. The signals go to its
// whole process group: a server started through npx or a shell is a child of the
// process toolshed started, and would otherwise outlive it.
type commandTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	// procs, when set, records the process while it runs (see Gateway.Kill).
	procs *processes
}

func (t commandTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	if t.procs != nil {
		t.procs.add(t.cmd)
	}
	return newLineConn(stdout, stdin, func() error { return t.stop(stdin) }), nil
}

func (t commandTransport) stop(stdin io.Closer) error {
	if err := stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- t.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(t.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if terminateProcessGroup(t.cmd) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	// The whole group: a server that outlived its launcher holds the pipes that
	// Wait waits for.
	killProcessGroup(t.cmd)
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("the server process does not exit")
}
