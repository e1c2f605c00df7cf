package testupstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TS2Session is a running MCP TypeScript SDK v2 client (@modelcontextprotocol/client
// 2.4.0, ts2/matrixclient.mjs) that a test drives command by command: list tools, call
// a tool, abort a call. It declares elicitation and answers it (accept {yes: true} when
// the schema asks for "yes", else decline), and counts the tool list changes it is told
// of, by the old notification or through subscriptions/listen alike.
type TS2Session struct {
	// Version is the protocol version the client negotiated.
	Version string

	stdin io.WriteCloser

	mu       sync.Mutex
	nextID   int
	waiting  map[int]chan ts2Reply
	changes  int
	elicited []string
	urls     []string // of the URL-mode elicitations accepted
}

type ts2Reply struct {
	Result json.RawMessage
	Err    *TS2Error
}

// TS2Error is an error the TypeScript client reported for a command: a JSON-RPC error
// (Code is its number) or one of the SDK's own (Code a name such as "REQUEST_TIMEOUT",
// or 0).
type TS2Error struct {
	Code    any    `json:"code"`
	Message string `json:"message"`
}

func (e *TS2Error) Error() string { return fmt.Sprintf("%s (code %v)", e.Message, e.Code) }

// TS2MatrixClient starts the TypeScript SDK v2 client, owned by the test, against
// target: a URL (Streamable HTTP) or a command line (stdio). mode is the SDK's
// versionNegotiation: "auto", "legacy", or a version to pin. It returns once the client
// has connected, and fails the test if it cannot within two minutes.
func TS2MatrixClient(t testing.TB, mode string, target ...string) *TS2Session {
	t.Helper()
	return TS2MatrixClientEnv(t, nil, mode, target...)
}

// TS2MatrixClientEnv is TS2MatrixClient with env added to the client's environment
// (TS2_BEARER, TS2_ELICIT_URL: see ts2/matrixclient.mjs).
func TS2MatrixClientEnv(t testing.TB, env map[string]string, mode string, target ...string) *TS2Session {
	t.Helper()
	npmFile(t, "@modelcontextprotocol/client (TypeScript SDK v2)", "@modelcontextprotocol/client/package.json")
	script := filepath.Join(Root(t), "internal", "testupstream", "ts2", "matrixclient.mjs")
	args := []string{script, mode}
	if len(target) == 1 && strings.HasPrefix(target[0], "http") {
		args = append(args, "http", target[0])
	} else {
		args = append(append(args, "stdio"), target...)
	}
	cmd := exec.Command(Node(t), args...)
	// The SDK gives a stdio server it starts HOME and little else of its environment:
	// a HOME of the test's own keeps a toolshed it starts off the user's search log.
	cmd.Env = append(os.Environ(), "TS2_MODULES="+filepath.Join(DepsDir(t), "npm", "node_modules"), "HOME="+t.TempDir())
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr := &SyncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	Own(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("testupstream: starting the TS v2 client: %v", err)
	}
	c := &TS2Session{stdin: stdin, waiting: map[int]chan ts2Reply{}}
	connected := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			c.read(sc.Bytes(), connected)
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		if t.Failed() {
			t.Logf("TS v2 client stderr:\n%s", stderr.String())
		}
	})
	select {
	case v := <-connected:
		c.Version = v
	case <-done:
		t.Fatalf("the TS v2 client did not connect to %v:\n%s", target, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the TS v2 client did not connect to %v within 2 minutes:\n%s", target, stderr.String())
	}
	return c
}

// read handles one line the client wrote.
func (c *TS2Session) read(line []byte, connected chan<- string) {
	var ev struct {
		ID      *int            `json:"id"`
		Event   string          `json:"event"`
		Version string          `json:"version"`
		Message string          `json:"message"`
		URL     string          `json:"url"`
		Result  json.RawMessage `json:"result"`
		Error   *TS2Error       `json:"error"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case ev.Event == "connected":
		connected <- ev.Version
	case ev.Event == "tools_list_changed":
		c.changes++
	case ev.Event == "elicitation":
		c.elicited = append(c.elicited, ev.Message)
		if ev.URL != "" {
			c.urls = append(c.urls, ev.URL)
		}
	case ev.ID != nil:
		if ch, ok := c.waiting[*ev.ID]; ok {
			delete(c.waiting, *ev.ID)
			ch <- ts2Reply{ev.Result, ev.Error}
		}
	}
}

// result is the reply's result, or its error.
func (r ts2Reply) result() (json.RawMessage, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	return r.Result, nil
}

// send writes a command and returns its id and the channel its reply comes on.
func (c *TS2Session) send(cmd map[string]any) (int, chan ts2Reply, error) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan ts2Reply, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	cmd["id"] = id
	b, _ := json.Marshal(cmd)
	_, err := c.stdin.Write(append(b, '\n'))
	return id, ch, err
}

// ListTools returns the client's tools/list result as the SDK gave it.
func (c *TS2Session) ListTools(ctx context.Context) (json.RawMessage, error) {
	_, ch, err := c.send(map[string]any{"op": "list"})
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// CallTool calls a tool and returns the CallToolResult as the SDK gave it. When ctx
// ends first the call is aborted (the SDK sends notifications/cancelled) and CallTool
// returns what the SDK then reports, normally an error.
func (c *TS2Session) CallTool(ctx context.Context, name string, args any) (json.RawMessage, error) {
	id, ch, err := c.send(map[string]any{"op": "call", "name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result()
	case <-ctx.Done():
	}
	if _, _, err := c.send(map[string]any{"op": "abort", "target": id}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result()
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("the TS v2 client did not end call %d within 30s of its abort", id)
	}
}

// ListChanges returns how many tool list changes the client has been told of.
func (c *TS2Session) ListChanges() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changes
}

// Elicitations returns the messages of the elicitations the client answered.
func (c *TS2Session) Elicitations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.elicited...)
}

// ElicitedURLs returns the URLs of the URL-mode elicitations the client accepted.
func (c *TS2Session) ElicitedURLs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.urls...)
}
