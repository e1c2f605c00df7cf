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
// Batches are read (their messages one by one) but answered message by message; MCP
// dropped batches in 2025-06-18.
type lineConn struct {
	w       io.Writer
	closeIO func() error
	// route, when set before the first Read, sees each message first, on the reading
	// goroutine; what it handles (reports true for) is not returned by Read.
	route func(jsonrpc.Message) bool
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
	data, merr := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: msg}})
	if merr != nil {
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
