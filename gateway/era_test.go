package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// modernUpstreams runs a gateway over servers of the TypeScript SDK v2, which speak MCP
// 2026-07-28 (modern-only over stdio and HTTP, and both eras over stdio), beside the
// npm reference server-everything (MCP 2025), and returns it with the files each TS
// server logs what it receives to, and the file that adds the tool late to the
// modern-only stdio server once it exists.
func modernUpstreams(t *testing.T) (h *harness, wires map[string]string, late string) {
	t.Helper()
	dir := t.TempDir()
	wires = map[string]string{}
	for _, name := range []string{"mstdio", "both", "mhttp"} {
		wires[name] = filepath.Join(dir, name+".wire")
	}
	late = filepath.Join(dir, "late")
	mcmd, margs := testupstream.TS2Stdio(t, "reject", map[string]string{"WIRE_LOG": wires["mstdio"], "LATE": late})
	bcmd, bargs := testupstream.TS2Stdio(t, "serve", map[string]string{"WIRE_LOG": wires["both"]})
	url := testupstream.TS2HTTP(t, "reject", map[string]string{"WIRE_LOG": wires["mhttp"]})
	ecmd, eargs := testupstream.Everything(t)
	h = startGateway(t, &config.Config{Servers: []config.Server{
		{Name: "mstdio", Type: config.Stdio, Command: mcmd, Args: margs},
		{Name: "both", Type: config.Stdio, Command: bcmd, Args: bargs},
		{Name: "mhttp", Type: config.HTTP, URL: url},
		{Name: "everything", Type: config.Stdio, Command: ecmd, Args: eargs},
	}}, gateway.Options{Mode: policy.Off})
	return h, wires, late
}

// Servers of the MCP 2026-07-28 era come up behind toolshed next to an old one, and
// their tools work: listed as the server wrote them, called, with their errors.
func TestModernUpstreams(t *testing.T) {
	h, wires, _ := modernUpstreams(t)
	for name, want := range map[string]string{"mstdio": "2026-07-28", "both": "2026-07-28", "mhttp": "2026-07-28", "everything": "2025-11-25"} {
		st := status(h, name)
		if st.State != gateway.Ready || st.Tools == 0 {
			t.Fatalf("%s: %+v, want ready with its tools", name, st)
		}
		if st.Protocol != want {
			t.Errorf("%s speaks %q, want %s", name, st.Protocol, want)
		}
	}

	// The definitions, byte for byte as the server lists them (the same factory makes
	// every TS server's tools): only the name has the server's prefix.
	direct := rawToolsHTTP(t, testupstream.TS2HTTP(t, "reject", nil))
	listed := rawTools(t, h)
	for _, server := range []string{"mstdio", "both", "mhttp"} {
		for name, def := range direct {
			got, ok := listed[server+"__"+name]
			if !ok {
				t.Errorf("%s__%s is not listed", server, name)
				continue
			}
			got = bytes.Replace(got, []byte(`"name":"`+server+`__`), []byte(`"name":"`), 1)
			if !bytes.Equal(got, def) {
				t.Errorf("%s__%s through toolshed:\n%s\nthe server's:\n%s", server, name, got, def)
			}
		}
	}

	cs := h.client("", nil)
	for _, server := range []string{"mstdio", "both", "mhttp"} {
		if res := call(t, cs, server+"__echo", map[string]any{"text": "héllo"}); res.IsError || resultText(res) != "héllo" {
			t.Errorf("%s__echo = %s (isError %v)", server, resultText(res), res.IsError)
		}
		// A bad call: the server's own refusal comes back as an error.
		if res := call(t, cs, server+"__echo", map[string]any{"text": 5}); !res.IsError || !strings.Contains(resultText(res), "text") {
			t.Errorf("%s__echo with a number = %s (isError %v), want the server's error about text", server, resultText(res), res.IsError)
		}
	}
	if res := call(t, cs, "everything__echo", map[string]any{"message": "old"}); res.IsError || !strings.Contains(resultText(res), "old") {
		t.Errorf("everything__echo = %s", resultText(res))
	}
	// Nothing of the era gets logged as refused along the way.
	for name, wire := range wires {
		if data, _ := os.ReadFile(wire); bytes.Contains(data, []byte(`"method":"logging/setLevel"`)) {
			t.Errorf("%s got logging/setLevel, which a modern server does not have:\n%s", name, data)
		}
	}
}

// A client's envelope keys in _meta (its claimed version and capabilities) never reach
// an upstream, which gets toolshed's own; the other keys (trace context) do.
func TestModernUpstreamEnvelope(t *testing.T) {
	h, wires, _ := modernUpstreams(t)
	cs := h.client("", nil)
	for _, server := range []string{"mstdio", "both", "mhttp"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server + "__echo", Arguments: map[string]any{"text": "meta"},
			Meta: mcp.Meta{
				"io.modelcontextprotocol/clientCapabilities": map[string]any{"forged": map[string]any{}},
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "forged-client", "version": "6.6.6"},
				"traceparent":                                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
				"baggage":                                    "k=v",
			}})
		if err != nil || res.IsError {
			t.Errorf("%s__echo with a forged envelope: %v %s", server, err, resultText(res))
			continue
		}
		wire := readWire(t, wires[server])
		var call []byte
		for _, line := range bytes.Split(wire, []byte("\n")) {
			if bytes.Contains(line, []byte(`"tools/call"`)) && bytes.Contains(line, []byte(`"meta"`)) {
				call = line
			}
		}
		if call == nil {
			t.Errorf("%s: no tools/call of echo on the wire:\n%s", server, wire)
			continue
		}
		for _, forged := range []string{"forged", "6.6.6"} {
			if bytes.Contains(call, []byte(forged)) {
				t.Errorf("%s got the client's envelope (%s):\n%s", server, forged, call)
			}
		}
		for _, kept := range []string{`"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`, `"baggage":"k=v"`,
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"name":"toolshed"`} {
			if !bytes.Contains(call, []byte(kept)) {
				t.Errorf("%s's tools/call lacks %s:\n%s", server, kept, call)
			}
		}
	}
}

// A modern server that asks for input through MRTR (input_required) gets the client's
// answer, asked of the client (never the SDK answering for it) once, without a loop
// (see mrtr_test.go); a cancelled call reaches the server; a tool the server adds
// reaches the client as list_changed.
func TestModernUpstreamInputCancelListChanged(t *testing.T) {
	h, wires, late := modernUpstreams(t)
	changed := make(chan struct{}, 10)
	cs := h.client("", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"yes": true}}, nil
		},
	})
	for _, server := range []string{"mstdio", "mhttp"} {
		res := call(t, cs, server+"__confirm", map[string]any{"what": "deploy"})
		if res.IsError || resultText(res) != "confirmed=true state=round1:deploy" {
			t.Errorf("%s__confirm = %s (code %q), want the client's answer confirmed", server, resultText(res), errorCode(t, res))
		}
		if n := bytes.Count(readWire(t, wires[server]), []byte(`"name":"confirm"`)); n != 2 {
			t.Errorf("%s got confirm %d times, want twice (the call and its retry)", server, n)
		}
	}

	for _, server := range []string{"mstdio", "mhttp"} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server + "__slow", Arguments: map[string]any{}})
			done <- err
		}()
		waitFor(t, server+"'s slow call at the server", func() bool { return bytes.Contains(readWire(t, wires[server]), []byte(`"name":"slow"`)) })
		cancel()
		<-done
		waitFor(t, "notifications/cancelled at "+server, func() bool {
			return bytes.Contains(readWire(t, wires[server]), []byte(`"method":"notifications/cancelled"`))
		})
	}

	if has(toolNames(t, cs), "mstdio__late") {
		t.Fatal("mstdio__late is listed before the server adds it")
	}
	if err := os.WriteFile(late, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/tools/list_changed reached the client")
	}
	waitFor(t, "mstdio__late in tools/list", func() bool { return has(toolNames(t, cs), "mstdio__late") })
	if res := call(t, cs, "mstdio__late", map[string]any{}); res.IsError || resultText(res) != "late" {
		t.Errorf("late = %s", resultText(res))
	}
}

// readWire returns what a TS test server has received so far.
func readWire(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return data
}

// rawTools returns the tools the gateway lists to a client, each as the JSON it wrote,
// by name.
func rawTools(t *testing.T, h *harness) map[string][]byte {
	t.Helper()
	conn := h.rawClient("")
	ctx := context.Background()
	send := func(id int64, method string, params any) json.RawMessage {
		p, _ := json.Marshal(params)
		req := &jsonrpc.Request{Method: method, Params: p}
		if id != 0 {
			req.ID, _ = jsonrpc.MakeID(float64(id))
		}
		if err := conn.Write(ctx, req); err != nil {
			t.Fatal(err)
		}
		if id == 0 {
			return nil
		}
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if resp, ok := msg.(*jsonrpc.Response); ok {
				if resp.Error != nil {
					t.Fatalf("%s: %v", method, resp.Error)
				}
				return resp.Result
			}
		}
	}
	send(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}})
	send(0, "notifications/initialized", map[string]any{})
	return toolsByName(t, send(2, "tools/list", map[string]any{}))
}

// rawToolsHTTP lists the tools of a modern Streamable HTTP server directly, each as the
// JSON the server wrote, by name.
func rawToolsHTTP(t *testing.T, url string) map[string][]byte {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req := testupstream.Request(t, "POST", url, map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
				last = append([]byte(nil), bytes.TrimSpace(d)...)
			}
		}
		data = last
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &msg); err != nil || msg.Result == nil {
		t.Fatalf("tools/list of %s: HTTP %d %s", url, resp.StatusCode, data)
	}
	return toolsByName(t, msg.Result)
}

// toolsByName splits a tools/list result into its tools, as written, by name.
func toolsByName(t *testing.T, result json.RawMessage) map[string][]byte {
	t.Helper()
	var r struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("tools/list result %s: %v", result, err)
	}
	out := map[string][]byte{}
	for _, tool := range r.Tools {
		var n struct {
			Name string `json:"name"`
		}
		json.Unmarshal(tool, &n)
		out[n.Name] = tool
	}
	return out
}

// A server of both eras that asks its client for input the old way (the go-sdk's
// Elicit on its session) cannot in 2026-07-28; protocol: legacy keeps it on 2025-11-25,
// where toolshed relays the request as before.
func TestProtocolLegacy(t *testing.T) {
	both := func(name, protocol string) config.Server {
		s := testServer(name, "basic")
		s.Env[bothErasEnv], s.Protocol = "1", protocol
		return s
	}
	h := startGateway(t, &config.Config{Servers: []config.Server{both("auto", ""), both("legacy", config.ProtocolLegacy)}}, gateway.Options{Mode: policy.Off})
	for name, want := range map[string]string{"auto": "2026-07-28", "legacy": "2025-11-25"} {
		if st := status(h, name); st.State != gateway.Ready || st.Protocol != want {
			t.Errorf("%s: %+v, want ready at %s", name, st, want)
		}
	}
	cs := h.client("", &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}})
	if got := resultText(call(t, cs, "legacy__elicit", map[string]any{})); got != "accept Ada" {
		t.Errorf("elicit of the legacy server = %q, want accept Ada", got)
	}
	// The same server spoken to in 2026-07-28 cannot ask: its call ends, with its error.
	if res := call(t, cs, "auto__elicit", map[string]any{}); resultText(res) == "accept Ada" {
		t.Errorf("elicit of the 2026-07-28 server = %q, want the server's refusal", resultText(res))
	}
}
