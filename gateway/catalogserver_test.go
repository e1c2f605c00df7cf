package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/scale"
)

// sdkCatalogTransport is the catalog server as it was before catalogServer: an
// mcp.Server with every tool of the catalog registered, listing each tool's listed
// definition. catalogServer must answer exactly as it does.
func sdkCatalogTransport(t *testing.T, name string, tools []json.RawMessage) mcp.Transport {
	server := mcp.NewServer(&mcp.Implementation{Name: name + " (catalog)", Version: Version}, &mcp.ServerOptions{HasTools: true})
	var listed listedTools
	server.AddReceivingMiddleware(listed.middleware)
	snap, _ := catalog.Build([]catalog.Source{{Server: name, Tools: tools}})
	for _, tl := range snap.Tools() {
		tool := tl
		e := newExposure(tl.Raw, tl.Name, tl.InputSchema, nil)
		_ = listed.add(server, e.def, e.raw, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return catalogEntryResult(name, tool.Qualified), nil
		})
	}
	clientT, serverT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return clientT
}

// exchange connects to tr as an upstream is connected (an SDK client on a
// captureTransport), and returns what toolshed sees: the initialize result, every
// tool of every page of tools/list as the server wrote it, and the result (or error)
// of a call of each named tool, as the server wrote it.
func exchange(t *testing.T, tr mcp.Transport, calls []string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	capture := newToolsCapture()
	var conn *captureConn
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		captureTransport{Transport: tr, capture: capture, connected: func(c *captureConn) { conn = c }}, &mcp.ClientSessionOptions{ProtocolVersion: UpstreamProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	init, _ := json.Marshal(cs.InitializeResult())
	out := []string{"initialize " + string(init)}
	capture.take()
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	for _, page := range capture.take() {
		var r struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(page, &r); err != nil {
			t.Fatal(err)
		}
		for _, tool := range r.Tools {
			out = append(out, "listed "+string(tool))
		}
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range calls {
		args, _ := json.Marshal(map[string]any{"name": name, "arguments": map[string]any{}})
		done := make(chan string, 1)
		conn.start(ctx, "tools/call", args, func(raw json.RawMessage, err error) {
			if err != nil {
				done <- fmt.Sprintf("call %s: error %v", name, err)
				return
			}
			done <- fmt.Sprintf("call %s: %s", name, raw)
		})
		out = append(out, <-done)
	}
	return out
}

// TestCatalogServerAsSDK checks that the catalog server answers initialize,
// tools/list, tools/call and ping byte for byte as the mcp.Server it replaces, for
// every real catalog toolshed ships (built-in and benchmark sets) and for definitions
// the SDK refuses or that a catalog drops.
func TestCatalogServerAsSDK(t *testing.T) {
	real, err := scale.Real("../bench")
	if err != nil {
		t.Fatal(err)
	}
	real = append(real, catalog.Source{Server: "odd", Tools: []json.RawMessage{
		json.RawMessage(`{"name":"string_schema","inputSchema":{"type":"string"}}`),
		json.RawMessage(`{"name":"no_type","description":"d","inputSchema":{"properties":{"a":{"type":"string"}}}}`),
		json.RawMessage(`{"name":"empty_schema","inputSchema":{}}`),
		json.RawMessage(`{"name":"no_schema"}`),
		json.RawMessage(`{"name":"bad header","inputSchema":{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}}`),
		json.RawMessage(`{"name":"good_header","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}}}}`),
		json.RawMessage(`{"name":"zeta","inputSchema":{"type":"object"},"outputSchema":{"properties":{}}}`),
		json.RawMessage(`{"name":"alpha","title":"A","inputSchema":{"type":"object"},"_meta":{"x":1},"annotations":{"readOnlyHint":true}}`),
		json.RawMessage(`{"inputSchema":{"type":"object"}}`),
	}})
	tools := 0
	for _, src := range real {
		var calls []string
		for _, raw := range src.Tools {
			var n struct {
				Name string `json:"name"`
			}
			json.Unmarshal(raw, &n)
			calls = append(calls, n.Name)
		}
		calls = append(calls, "no_such_tool")
		want := exchange(t, sdkCatalogTransport(t, src.Server, src.Tools), calls)
		got := exchange(t, catalogTransport(newCatalogServer(src.Server, src.Tools, nil)), calls)
		if len(got) != len(want) {
			t.Errorf("%s: %d answers, want %d:\n got %.2000s\nwant %.2000s", src.Server, len(got), len(want), got, want)
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				at := 0
				for at < len(got[i]) && at < len(want[i]) && got[i][at] == want[i][at] {
					at++
				}
				from := max(0, at-100)
				t.Errorf("%s: from byte %d:\n got %.300s\nwant %.300s", src.Server, at, got[i][from:], want[i][from:])
			}
		}
		tools += len(src.Tools)
	}
	if tools < 2000 {
		t.Fatalf("compared %d tools; the real catalogs have more", tools)
	}
}
