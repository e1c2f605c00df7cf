package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// toolshed serve reaches servers of MCP 2026-07-28 (TypeScript SDK v2, modern-only over
// stdio and Streamable HTTP) beside an old npm server: each comes up ready (before, a
// modern-only server failed with "Unsupported protocol version: 2025-11-25" and
// restarted forever), /status says which version each speaks, and a call works.
func TestServeModernUpstreams(t *testing.T) {
	bin := toolshedBinary(t)
	scmd, sargs := testupstream.TS2Stdio(t, "reject", nil)
	ecmd, eargs := testupstream.Everything(t)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"ts2stdio":   map[string]any{"command": scmd, "args": sargs},
		"ts2http":    map[string]any{"url": testupstream.TS2HTTP(t, "reject", nil)},
		"everything": map[string]any{"command": ecmd, "args": eargs},
	}})
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	stderr := startCommand(t, bin, nil, []string{"serve", "--http", addr, "--config", cfg, "--tool-search", "off"}, testupstream.ServersReady)
	if log := stderr.String(); !strings.Contains(log, "3 of 3 servers ready") || strings.Contains(log, "could not start") {
		t.Fatalf("toolshed serve did not bring all three servers up:\n%s", log)
	}

	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Upstreams []struct{ Name, State, Protocol string }
	}
	err = json.NewDecoder(resp.Body).Decode(&status)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ts2stdio": "2026-07-28", "ts2http": "2026-07-28", "everything": "2025-11-25"}
	for _, u := range status.Upstreams {
		if u.State != "ready" || u.Protocol != want[u.Name] {
			t.Errorf("/status: %s is %s at %q, want ready at %s", u.Name, u.State, u.Protocol, want[u.Name])
		}
	}
	if len(status.Upstreams) != len(want) {
		t.Errorf("/status lists %d servers, want %d", len(status.Upstreams), len(want))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "era-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tool := range []string{"ts2stdio__echo", "ts2http__echo"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "through toolshed"}})
		if err != nil {
			t.Errorf("%s: %v", tool, err)
			continue
		}
		var text *mcp.TextContent
		if len(res.Content) == 1 {
			text, _ = res.Content[0].(*mcp.TextContent)
		}
		if res.IsError || text == nil || text.Text != "through toolshed" {
			t.Errorf("%s = %+v", tool, res)
		}
	}
}

// A client of MCP 2026-07-28 on toolshed serve's stdio (enveloped requests, no
// initialize) calls a modern server's tool that asks for input through MRTR: it gets
// input_required under toolshed's requestState, not the server's, and its retry with
// the answer completes the call with the server's own state echoed back. Before, the
// call ended with input_not_relayed.
func TestServeStdioMRTR(t *testing.T) {
	wire := filepath.Join(t.TempDir(), "ts2.wire")
	scmd, sargs := testupstream.TS2Stdio(t, "reject", map[string]string{"WIRE_LOG": wire})
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"ts2stdio": map[string]any{"command": scmd, "args": sargs},
		"ts2http":  map[string]any{"url": testupstream.TS2HTTP(t, "reject", nil)},
	}})
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startPiped(t, "--config", cfg, "--tool-search", "off", "--db", "off")
	envelope := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`
	type result struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
		Content       []struct{ Text string }    `json:"content"`
	}
	callTool := func(id int, tool, extra string) (result, string) {
		t.Helper()
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"what":"deploy"},%s%s}}`, id, tool, envelope, extra))
		m := p.answer(strconv.Itoa(id))
		var r result
		if m.Error != nil || json.Unmarshal(m.Result, &r) != nil {
			t.Fatalf("%s: %+v %s", tool, m.Error, m.Result)
		}
		return r, string(m.Result)
	}
	for i, tool := range []string{"ts2stdio__confirm", "ts2http__confirm"} {
		first, raw := callTool(10*i+1, tool, "")
		if first.ResultType != "input_required" || first.InputRequests["ok"] == nil || first.RequestState == "" || strings.Contains(raw, "round1") {
			t.Fatalf("%s = %s, want input_required under toolshed's own requestState", tool, raw)
		}
		state, _ := json.Marshal(first.RequestState)
		done, raw := callTool(10*i+2, tool, `,"requestState":`+string(state)+`,"inputResponses":{"ok":{"action":"accept","content":{"yes":true}}}`)
		if done.ResultType != "complete" || len(done.Content) != 1 || done.Content[0].Text != "confirmed=true state=round1:deploy" {
			t.Errorf("%s retried = %s, want the server's completed result", tool, raw)
		}
	}
	data, _ := os.ReadFile(wire)
	if n := strings.Count(string(data), `"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`); n != 2 {
		t.Errorf("the trace context reached the stdio server %d times, want on both rounds:\n%s", n, data)
	}
}
