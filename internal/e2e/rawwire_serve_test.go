//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// These tests check that toolshed serve forwards tool definitions and tool results byte
// for byte: a client that reads the JSON-RPC bytes off the wire (no SDK decoding them)
// gets from toolshed what the upstream server wrote, over stdio and over Streamable
// HTTP, from a raw upstream whose bytes the test controls and from the real npm
// server-everything. The only changes allowed are the listed name (server__tool) and,
// in a schema without "type", "type": "object" (see gateway.listedDefinition).
// Insignificant whitespace between JSON tokens is not kept (the SDK's JSON-RPC writer
// compacts every message), so the fixtures are compact.

// rawUpstreamEnv makes the test binary serve rawTools over stdio instead of running
// tests (see init).
const rawUpstreamEnv = "TOOLSHED_E2E_RAW_UPSTREAM"

func init() {
	if os.Getenv(rawUpstreamEnv) == "1" {
		os.Exit(serveRawUpstream(os.Stdin, os.Stdout))
	}
}

// rawTools are the raw upstream's definitions and results: members the SDK's structs
// do not model (execution, x-vendor, unknown content types), annotations with hints
// left out, numbers a float64 cannot hold or would print differently, \u escapes,
// characters JSON encoders like to escape (<, >, &, U+2028), unusual key order, _meta.
var rawTools = []struct {
	name, def, listed, result string
}{
	{
		name:   "measure",
		def:    `{"name":"measure","title":"Measure \u00e9t\u00e9","description":"Returns <b>numbers</b> & more\u2028and  é` + "\u2028" + `","inputSchema":{"type":"object","properties":{"big":{"type":"integer","default":12345678901234567890},"ratio":{"type":"number","default":1.0,"maximum":1.7976931348623157e308}},"required":["big"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"n":{"type":"number"}}},"annotations":{"readOnlyHint":true,"title":"M"},"execution":{"taskSupport":"optional"},"x-vendor":{"z":1,"a":[1.0,-0.0,1E+2]},"_meta":{"vendor/key":{"b":2,"a":1}}}`,
		listed: `{"name":"raw__measure","title":"Measure \u00e9t\u00e9","description":"Returns <b>numbers</b> & more\u2028and  é` + "\u2028" + `","inputSchema":{"type":"object","properties":{"big":{"type":"integer","default":12345678901234567890},"ratio":{"type":"number","default":1.0,"maximum":1.7976931348623157e308}},"required":["big"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"n":{"type":"number"}}},"annotations":{"readOnlyHint":true,"title":"M"},"execution":{"taskSupport":"optional"},"x-vendor":{"z":1,"a":[1.0,-0.0,1E+2]},"_meta":{"vendor/key":{"b":2,"a":1}}}`,
		result: `{"content":[{"type":"text","text":"12345678901234567890 \u003c\u003e é <&>","annotations":{"priority":1.0}}],"structuredContent":{"n":12345678901234567890,"f":1.0,"g":1.7976931348623157e308,"e":1E-7,"s":"\ud83d\ude00"},"x-extra":{"b":1,"a":2},"_meta":{"vendor/trace":"abc"}}`,
	},
	{
		name:   "plain",
		def:    `{"inputSchema":{"properties":{"q":{"type":"string"}}},"description":"no type in its schema","name":"plain","annotations":{"destructiveHint":false}}`,
		listed: `{"inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},"description":"no type in its schema","name":"raw__plain","annotations":{"destructiveHint":false}}`,
		result: `{"isError":true,"content":[{"type":"text","text":"failed on purpose"}]}`,
	},
	{
		name:   "bare",
		def:    `{"name":"bare","description":"no schema at all"}`,
		listed: `{"name":"raw__bare","description":"no schema at all","inputSchema":{"type":"object"}}`,
		result: `{"content":[{"type":"future_block","data":{"k":1}}],"structuredContent":{"list":[0.1,0.2,3.0e10]}}`,
	},
}

// argsTool is a tool of the raw upstream that answers with the arguments it got.
const argsTool = `{"name":"args","inputSchema":{"type":"object"}}`

// rawArguments are arguments a client sends, as the SDK's structs would not keep them.
const rawArguments = `{"n":12345678901234567890,"f":1.0,"s":"\u00e9 <&> é","z":{"b":1,"a":[2.50,1e2]}}`

// serveRawUpstream is a minimal MCP server speaking newline-delimited JSON-RPC on r and
// w, writing rawTools' bytes as they are.
func serveRawUpstream(r io.Reader, w io.Writer) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	}
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil {
			continue // notifications and responses
		}
		switch msg.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(msg.Params, &p)
			reply(msg.ID, fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`, p.ProtocolVersion))
		case "ping":
			reply(msg.ID, `{}`)
		case "tools/list":
			defs := []string{argsTool}
			for _, t := range rawTools {
				defs = append(defs, t.def)
			}
			reply(msg.ID, `{"tools":[`+strings.Join(defs, ",")+`]}`)
		case "tools/call":
			var p struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			json.Unmarshal(msg.Params, &p)
			if p.Name == "args" {
				// The arguments as they arrived, byte for byte.
				reply(msg.ID, `{"content":[],"structuredContent":`+string(p.Arguments)+`}`)
				continue
			}
			found := false
			for _, t := range rawTools {
				if t.name == p.Name {
					reply(msg.ID, t.result)
					found = true
				}
			}
			if !found {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool"}}`+"\n", msg.ID)
			}
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", msg.ID)
		}
	}
	return 0
}

// wireClient is an MCP client that sends JSON-RPC requests and returns the bytes of
// each result exactly as they came off the wire.
type wireClient interface {
	// call sends a request and returns its result member's bytes.
	call(t *testing.T, method, params string) json.RawMessage
	notify(t *testing.T, method string)
}

// resultOf returns the bytes of the result member of the JSON-RPC response msg if its
// id is id. It reads the message's members without decoding their values.
func resultOf(msg []byte, id int) (json.RawMessage, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(msg, &m) != nil || string(m.ID) != fmt.Sprint(id) {
		return nil, false
	}
	if m.Error != nil {
		return m.Error, true
	}
	return m.Result, true
}

// stdioWire talks to a server over its stdin and stdout.
type stdioWire struct {
	in   io.Writer
	out  *bufio.Reader
	next int
}

func startStdioWire(t *testing.T, name string, args ...string) *stdioWire {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), testupstream.ClientEnv(t)...)
	testupstream.OwnGraceful(t, cmd)
	cmd.Stderr = &testupstream.SyncBuffer{}
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
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(name), cmd.Stderr)
		}
	})
	return &stdioWire{in: in, out: bufio.NewReaderSize(out, 1<<20)}
}

func (c *stdioWire) call(t *testing.T, method, params string) json.RawMessage {
	t.Helper()
	c.next++
	fmt.Fprintf(c.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.next, method, params)
	type line struct {
		b   []byte
		err error
	}
	got := make(chan line, 1)
	go func() {
		for {
			b, err := c.out.ReadBytes('\n')
			if err != nil {
				got <- line{nil, err}
				return
			}
			if _, ok := resultOf(b, c.next); ok {
				got <- line{b, nil}
				return
			}
		}
	}()
	select {
	case l := <-got:
		if l.err != nil {
			t.Fatalf("%s: reading the answer: %v", method, l.err)
		}
		res, _ := resultOf(l.b, c.next)
		return res
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no answer within 60s", method)
	}
	return nil
}

func (c *stdioWire) notify(t *testing.T, method string) {
	fmt.Fprintf(c.in, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
}

// httpWire talks to a Streamable HTTP endpoint, reading JSON or server-sent event
// responses.
type httpWire struct {
	url, session string
	next         int
}

func (c *httpWire) post(t *testing.T, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	return resp
}

func (c *httpWire) call(t *testing.T, method, params string) json.RawMessage {
	t.Helper()
	c.next++
	resp := c.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.next, method, params))
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d %v: %s", method, resp.StatusCode, err, body)
	}
	msgs := [][]byte{body}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msgs = nil
		for _, l := range strings.Split(string(body), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				msgs = append(msgs, []byte(d))
			}
		}
	}
	for _, m := range msgs {
		if res, ok := resultOf(m, c.next); ok {
			return res
		}
	}
	t.Fatalf("%s: no answer in %s", method, body)
	return nil
}

func (c *httpWire) notify(t *testing.T, method string) {
	c.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q}`, method)).Body.Close()
}

// startServeHTTP runs toolshed serve --http on a free port and returns its MCP URL once
// every upstream is ready.
func startServeHTTP(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, toolshedBin, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), testupstream.ClientEnv(t)...)
	testupstream.OwnGraceful(t, cmd)
	stderr := &testupstream.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("toolshed stderr:\n%s", stderr)
		}
	})
	addr := regexp.MustCompile(`at (http://\S+/mcp) `)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			base := strings.TrimSuffix(m[1], "/mcp")
			if resp, err := http.Get(base + "/status"); err == nil {
				var h struct {
					Upstreams []struct {
						State string `json:"state"`
					} `json:"upstreams"`
				}
				json.NewDecoder(resp.Body).Decode(&h)
				resp.Body.Close()
				ready := len(h.Upstreams) > 0
				for _, u := range h.Upstreams {
					ready = ready && u.State == "ready"
				}
				if ready {
					return m[1]
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("toolshed serve --http did not get ready within 60s")
	return ""
}

// startServe runs toolshed serve with args over stdio or HTTP (mode) and returns a wire
// client in an initialized session.
func startServe(t *testing.T, mode string, args ...string) wireClient {
	t.Helper()
	var c wireClient
	if mode == "stdio" {
		c = startStdioWire(t, toolshedBin, append([]string{"serve"}, args...)...)
	} else {
		c = &httpWire{url: startServeHTTP(t, args...)}
	}
	initialize(t, c)
	return c
}

// initialize opens an MCP session at protocol 2025-11-25, the version toolshed speaks to
// its upstreams, so that results carry no member a later version adds.
func initialize(t *testing.T, c wireClient) {
	t.Helper()
	c.call(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wire","version":"1"}}`)
	c.notify(t, "notifications/initialized")
}

// listedTools returns the bytes of each tool in a tools/list result, by name.
func listedTools(t *testing.T, c wireClient) map[string]json.RawMessage {
	t.Helper()
	var res struct {
		Tools []json.RawMessage `json:"tools"`
	}
	raw := c.call(t, "tools/list", `{}`)
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("tools/list result %s: %v", raw, err)
	}
	out := map[string]json.RawMessage{}
	for _, tool := range res.Tools {
		var n struct {
			Name string `json:"name"`
		}
		json.Unmarshal(tool, &n)
		out[n.Name] = tool
	}
	return out
}

// rawUpstreamConfig writes a config with the raw upstream as server "raw".
func rawUpstreamConfig(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"raw": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{rawUpstreamEnv: "1"}},
	}})
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeForwardsBytes: tools/list and tools/call through toolshed serve carry the raw
// upstream's definitions and results byte for byte, over stdio and over HTTP.
func TestServeForwardsBytes(t *testing.T) {
	cfg := rawUpstreamConfig(t)
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			c := startServe(t, mode, "--config", cfg, "--tool-search", "off")
			tools := listedTools(t, c)
			for _, tool := range rawTools {
				if got := tools["raw__"+tool.name]; string(got) != tool.listed {
					t.Errorf("tools/list: %s is\n%s\nwant\n%s", tool.name, got, tool.listed)
				}
				got := c.call(t, "tools/call", fmt.Sprintf(`{"name":"raw__%s","arguments":{"big":1}}`, tool.name))
				if string(got) != tool.result {
					t.Errorf("tools/call %s:\n%s\nwant the upstream's\n%s", tool.name, got, tool.result)
				}
			}
			if len(tools) != len(rawTools)+1 {
				t.Errorf("tools/list has %d tools, want %d", len(tools), len(rawTools)+1)
			}
			want := `{"content":[],"structuredContent":` + rawArguments + `}`
			if got := c.call(t, "tools/call", `{"name":"raw__args","arguments":`+rawArguments+`}`); string(got) != want {
				t.Errorf("the arguments reached the upstream as\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestServeForwardsBytesToolCall: a call by tool_call returns the upstream's bytes too.
func TestServeForwardsBytesToolCall(t *testing.T) {
	c := startServe(t, "stdio", "--config", rawUpstreamConfig(t), "--tool-search", "on")
	for _, tool := range rawTools {
		got := c.call(t, "tools/call", fmt.Sprintf(`{"name":"tool_call","arguments":{"name":"raw__%s","arguments":{"big":1}}}`, tool.name))
		if string(got) != tool.result {
			t.Errorf("tool_call %s:\n%s\nwant the upstream's\n%s", tool.name, got, tool.result)
		}
	}
}

// TestServeForwardsEverythingBytes: the real server-everything's definitions and
// results reach a client through toolshed as the server writes them to a client
// directly.
func TestServeForwardsEverythingBytes(t *testing.T) {
	command, args := testupstream.Everything(t)
	direct := startStdioWire(t, command, args...)
	initialize(t, direct)
	want := listedTools(t, direct)

	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": command, "args": args}}})
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	calls := []struct{ tool, args string }{
		{"echo", `{"message":"héllo <b>&</b> \u2028"}`},
		{"get-sum", `{"a":1.5,"b":12345678901234567890}`},
		{"get-structured-content", `{"location":"New York"}`},
		{"get-annotated-message", `{"messageType":"error","includeImage":true}`},
		{"get-tiny-image", `{}`},
	}
	var wantResults []json.RawMessage
	for _, c := range calls {
		wantResults = append(wantResults, direct.call(t, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, c.tool, c.args)))
	}
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			c := startServe(t, mode, "--config", path, "--tool-search", "off")
			got := listedTools(t, c)
			compared := 0
			for name, def := range want {
				via, ok := got["everything__"+name]
				if !ok {
					// Which tools a server lists can depend on the client's
					// capabilities, which toolshed declares for itself.
					continue
				}
				compared++
				if wantDef := renameTool(t, def, "everything__"+name); string(via) != string(wantDef) {
					t.Errorf("tools/list: %s through toolshed is\n%s\ndirectly\n%s", name, via, def)
				}
			}
			if compared < 10 {
				t.Errorf("compared %d definitions, want every common one (direct %d, through toolshed %d)", compared, len(want), len(got))
			}
			for i, call := range calls {
				res := c.call(t, "tools/call", fmt.Sprintf(`{"name":"everything__%s","arguments":%s}`, call.tool, call.args))
				if !bytes.Equal(res, wantResults[i]) {
					t.Errorf("tools/call %s through toolshed:\n%s\ndirectly:\n%s", call.tool, res, wantResults[i])
				}
			}
		})
	}
}

// renameTool returns def with its name member's value replaced, and nothing else
// changed: what toolshed may change in a definition whose schemas have a type.
func renameTool(t *testing.T, def json.RawMessage, name string) []byte {
	t.Helper()
	var n struct {
		Name string `json:"name"`
	}
	json.Unmarshal(def, &n)
	old, _ := json.Marshal(n.Name)
	quoted, _ := json.Marshal(name)
	prefix := []byte(`{"name":` + string(old))
	if !bytes.HasPrefix(def, prefix) {
		t.Fatalf("the server's definition does not start with its name: %s", def)
	}
	return append([]byte(`{"name":`+string(quoted)), def[len(prefix):]...)
}
