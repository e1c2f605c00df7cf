package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// echoUpstreamEnv, set, makes the test binary an MCP server over stdio (see TestMain):
// an upstream that starts in milliseconds, as the npm servers do not.
const echoUpstreamEnv = "TOOLSHED_TEST_ECHO"

// serveEcho serves one tool, echo, which returns its text argument.
func serveEcho() int {
	server := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Returns its text."}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	// More tools, when $TOOLSHED_TEST_ECHO is a number: the more a catalog holds, the
	// longer toolshed takes to build it once the server is up.
	n, _ := strconv.Atoi(os.Getenv(echoUpstreamEnv))
	for i := range n {
		server.AddTool(&mcp.Tool{Name: fmt.Sprintf("filler_%05d", i), Description: fmt.Sprintf("Reports item %d of the inventory, with its stock and price.", i), InputSchema: json.RawMessage(`{"type":"object","properties":{"item":{"type":"integer"}}}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "echo upstream:", err)
		return 1
	}
	return 0
}

// echoConfig writes a config with one server, echo, with tools more tools than its
// echo (see serveEcho).
func echoConfig(t *testing.T, tools int) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return jsonFile(t, map[string]any{"mcpServers": map[string]any{
		"echo": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{echoUpstreamEnv: strconv.Itoa(tools)}},
	}})
}

// pipedServe is `toolshed serve` with its stdin and stdout as pipes the test drives
// line by line.
type pipedServe struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *testupstream.SyncBuffer
	exited chan error
}

// startPiped starts `toolshed serve args...`; it is stopped when the test ends.
func startPiped(t *testing.T, args ...string) *pipedServe {
	t.Helper()
	cmd := exec.Command(toolshedBinary(t), append([]string{"serve"}, args...)...)
	testupstream.OwnGraceful(t, cmd)
	p := &pipedServe{t: t, cmd: cmd, stderr: &testupstream.SyncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.in, p.out = in, bufio.NewReaderSize(out, 1<<20)
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		in.Close()
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			t.Errorf("toolshed serve did not exit within 30s of its stdin closing")
		}
		if t.Failed() {
			t.Logf("toolshed serve stderr:\n%s", p.stderr)
		}
	})
	return p
}

// send writes lines to serve's stdin, each ended by a newline.
func (p *pipedServe) send(lines ...string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, strings.Join(lines, "\n")+"\n"); err != nil {
		p.t.Fatalf("writing to serve: %v", err)
	}
}

// rpcMessage is a JSON-RPC message as toolshed writes it.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// readLine reads the next line serve writes, failing the test if none comes within
// a minute.
func (p *pipedServe) readLine() string {
	p.t.Helper()
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		line, err := p.out.ReadString('\n')
		got <- read{line, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			p.t.Fatalf("reading serve's answer: %v (read %q)", r.err, r.line)
		}
		return strings.TrimSuffix(r.line, "\n")
	case <-time.After(time.Minute):
		p.t.Fatalf("serve wrote nothing within a minute")
	}
	return ""
}

// answer reads messages until the response with id, skipping notifications.
func (p *pipedServe) answer(id string) rpcMessage {
	p.t.Helper()
	for {
		line := p.readLine()
		var m rpcMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			p.t.Fatalf("serve wrote %q, not a JSON-RPC message: %v", line, err)
		}
		if m.Method == "" && string(m.ID) == id {
			return m
		}
		if m.Method == "" {
			p.t.Fatalf("serve answered id %s, want %s: %s", m.ID, id, line)
		}
	}
}

const initializeLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`

// A client that calls a tool from a list it cached, at once after initialize and with no
// tools/list before, gets the tool's answer every time: at once, and at every delay up
// to 75 ms, where a call used to find no tool while the server's tools were not yet in
// the catalog (30 of 80 tries on a loaded machine; TestCallRightAfterStartFindsTool
// holds that moment deterministically).
func TestServeStdioCallRightAfterInitialize(t *testing.T) {
	cfg := echoConfig(t, 0)
	for i := range 16 {
		delay := time.Duration(i) * 5 * time.Millisecond
		p := startPiped(t, "--config", cfg, "--tool-search", "off", "--db", "off")
		p.send(initializeLine)
		if m := p.answer("0"); m.Error != nil {
			t.Fatalf("initialize: %s", m.Error.Message)
		}
		time.Sleep(delay) // the client's own pace between its messages, not a wait for a state
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo__echo","arguments":{"text":"hi"}}}`)
		m := p.answer("1")
		var res mcp.CallToolResult
		if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
			t.Errorf("try %d, %v after initialize: the call got %s %s, want hi", i, delay, m.Result, errText(m))
		}
		p.in.Close()
	}
}

func errText(m rpcMessage) string {
	if m.Error == nil {
		return ""
	}
	return fmt.Sprintf("error %d %s", m.Error.Code, m.Error.Message)
}

// serveInput runs `toolshed serve args...` with input as its whole stdin, until it exits
// by itself (it must, at the end of its input), and returns the messages it wrote.
func serveInput(t *testing.T, input string, args ...string) []rpcMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolshedBinary(t), append([]string{"serve", "--db", "off"}, args...)...)
	testupstream.OwnGraceful(t, cmd)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader(input)
	stderr := &testupstream.SyncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil || ctx.Err() != nil {
		t.Fatalf("toolshed serve with %q on stdin: %v (it must exit 0 at the end of its input)\n%s", input, err, stderr)
	}
	var msgs []rpcMessage
	for line := range strings.Lines(string(out)) {
		var m rpcMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("serve wrote %q, not a JSON-RPC message: %v", line, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// answered returns the responses among msgs, by id.
func answered(msgs []rpcMessage) map[string]rpcMessage {
	out := map[string]rpcMessage{}
	for _, m := range msgs {
		if m.Method == "" {
			out[string(m.ID)] = m
		}
	}
	return out
}

// Every request read before the end of serve's input is answered, then serve exits:
// `printf '<initialize>\n' | toolshed serve` answered nothing ("initialized before
// initialize"), and a last line without a newline is answered whatever its method
// (ping was not).
func TestServeStdioAnswersBeforeEOF(t *testing.T) {
	const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	for _, tc := range []struct {
		name, input string
		ids         []string
	}{
		{"initialize alone", initializeLine + "\n", []string{"0"}},
		{"ping last, no newline", initializeLine + "\n" + initialized + "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"0", "1"}},
		{"tools/list last, no newline", initializeLine + "\n" + initialized + "\n" + `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, []string{"0", "1"}},
		{"tools/call last", initializeLine + "\n" + initialized + "\n" + `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"memory__read_graph","arguments":{}}}` + "\n", []string{"0", `"c"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := answered(serveInput(t, tc.input, "--tool-search", "off"))
			for _, id := range tc.ids {
				if m, ok := got[id]; !ok || m.Error != nil || len(m.Result) == 0 {
					t.Errorf("request %s: got %+v %s, want its result", id, m, errText(m))
				}
			}
			if len(got) != len(tc.ids) {
				t.Errorf("%d answers, want %d: %v", len(got), len(tc.ids), got)
			}
		})
	}
}

// A JSON-RPC batch is answered with an array, in the batch's order, where the
// session's protocol version has batches (2025-03-26 and before); from 2025-06-18, which
// removed them, each of its requests gets an error saying so, under its own id. Either
// way the messages after it are served, and nothing hangs.
func TestServeStdioBatches(t *testing.T) {
	const batch = `[{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"memory__read_graph","arguments":{}}},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}},{"jsonrpc":"2.0","id":1,"method":"ping"}]`
	for _, version := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			init := strings.Replace(initializeLine, "2025-06-18", version, 1)
			input := init + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + batch + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, toolshedBinary(t), "serve", "--db", "off", "--tool-search", "off")
			testupstream.OwnGraceful(t, cmd)
			cmd.WaitDelay = 5 * time.Second
			cmd.Stdin = strings.NewReader(input)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("serve: %v", err)
			}
			var array []rpcMessage
			singles := map[string]rpcMessage{}
			for line := range strings.Lines(string(out)) {
				if strings.HasPrefix(line, "[") {
					if array != nil || json.Unmarshal([]byte(line), &array) != nil {
						t.Fatalf("a second array, or not one: %s", line)
					}
					continue
				}
				var m rpcMessage
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("serve wrote %q: %v", line, err)
				}
				if m.Method == "" {
					singles[string(m.ID)] = m
				}
			}
			if _, ok := singles["2"]; !ok {
				t.Errorf("the ping after the batch was not answered")
			}
			if version < "2025-06-18" {
				if len(array) != 2 || string(array[0].ID) != `"b"` || string(array[1].ID) != "1" || array[0].Error != nil || array[1].Error != nil {
					t.Errorf("the batch was answered with %+v, want an array of the results of \"b\" and 1, in order:\n%s", array, out)
				}
				if _, ok := singles["1"]; ok {
					t.Errorf("a request of the batch was also answered on its own:\n%s", out)
				}
				return
			}
			if array != nil {
				t.Errorf("a %s session got an array: %+v", version, array)
			}
			for _, id := range []string{`"b"`, "1"} {
				m, ok := singles[id]
				if !ok || m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "batches are not part of MCP 2025-06-18") || !strings.Contains(m.Error.Message, version) {
					t.Errorf("request %s of the batch got %+v %s, want an invalid-request error saying batches are gone in %s", id, m, errText(m), version)
				}
			}
		})
	}
}

// A client that pipes requests far faster than they are answered has them all
// answered, in bounded memory: toolshed stops reading while MaxOpenRequests are open
// (TestStdioBackpressure in package gateway checks the bound itself).
func TestServeStdioPipelined(t *testing.T) {
	const n = 20000
	p := startPiped(t, "--db", "off", "--tool-search", "off")
	var input strings.Builder
	input.WriteString(initializeLine + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
	}
	written := make(chan error, 1)
	go func() {
		_, err := io.WriteString(p.in, input.String())
		written <- err
	}()
	seen := map[string]bool{}
	for len(seen) < n+1 {
		var m rpcMessage
		line := p.readLine()
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("serve wrote %q: %v", line, err)
		}
		if m.Method == "" {
			if m.Error != nil {
				t.Fatalf("request %s: %s", m.ID, errText(m))
			}
			seen[string(m.ID)] = true
		}
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}
