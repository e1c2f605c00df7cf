//go:build e2e && unix

package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// The MCP TypeScript SDK's Client (@modelcontextprotocol/sdk 1.32.2), run by node
// (testdata/tssdk_client.mjs) against toolshed serve as a separate process, over stdio
// (the client spawns toolshed) and over Streamable HTTP, in front of the npm reference
// servers and the recorder.

const tssdkScript = "tssdk_client.mjs"

// sdkTransports runs f as a subtest over each transport a client reaches toolshed by.
func sdkTransports(t *testing.T, f func(t *testing.T, transport string)) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) { f(t, transport) })
	}
}

// sdkModes runs f as a subtest with tool search on and off.
func sdkModes(t *testing.T, f func(t *testing.T, mode string)) {
	for _, mode := range []string{"on", "off"} {
		t.Run("search-"+mode, func(t *testing.T) { f(t, mode) })
	}
}

// mcpTool is a tool definition as a client receives it.
type mcpTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
}

// mcpResult is a tools/call result as a client receives it.
type mcpResult struct {
	Content           []map[string]any `json:"content"`
	StructuredContent json.RawMessage  `json:"structuredContent,omitempty"`
	IsError           bool             `json:"isError,omitempty"`
}

func (r mcpResult) text() string {
	var parts []string
	for _, c := range r.Content {
		if c["type"] == "text" {
			s, _ := c["text"].(string)
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// toolCallArgs is what the memory and filesystem calls send, and what the test then
// finds on disk.
type toolCallArgs struct {
	message     string
	entity      string
	observation string
	file        string
	content     string
}

func newToolCallArgs(g *sdkGateway, client string) toolCallArgs {
	return toolCallArgs{
		// Quotes, escapes, non-ASCII and an astral-plane character must come back exactly.
		message:     `héllo "wörld" \ <&> 🚀 ✓`,
		entity:      "toolshed-" + g.marker,
		observation: "relays calls from " + client,
		file:        filepath.Join(g.fsDir, "from-the-client.txt"),
		content:     "written through toolshed ✓\nsecond line\n",
	}
}

func (a toolCallArgs) plan(scenario string) map[string]any {
	return map[string]any{
		"scenario": scenario,
		"wanted":   []string{"everything__echo", "memory__create_entities", "filesystem__write_file"},
		"message":  a.message,
		"entity":   map[string]any{"name": a.entity, "entityType": "gateway", "observations": []string{a.observation}},
		"file":     a.file, "content": a.content,
	}
}

// checkEffects checks the effects of the memory and filesystem calls on disk, and the
// echo's exact text.
func checkEffects(t *testing.T, g *sdkGateway, ev sdkEvents, a toolCallArgs) {
	t.Helper()
	var echo, memory, write struct{ Result mcpResult }
	ev.get(t, "echo", &echo)
	ev.get(t, "memory", &memory)
	ev.get(t, "write", &write)
	if want := []map[string]any{{"type": "text", "text": "Echo: " + a.message}}; echo.Result.IsError || !reflect.DeepEqual(echo.Result.Content, want) {
		t.Errorf("echo through toolshed = %+v, want content %v", echo.Result, want)
	}
	if memory.Result.IsError {
		t.Errorf("memory create_entities through toolshed failed: %s", memory.Result.text())
	}
	graph, err := os.ReadFile(g.memoryFile)
	if err != nil {
		t.Errorf("server-memory wrote no graph file: %v", err)
	}
	found := false
	for _, line := range bytes.Split(graph, []byte("\n")) {
		var e struct {
			Type, Name, EntityType string
			Observations           []string
		}
		if json.Unmarshal(line, &e) == nil && e.Name == a.entity {
			found = e.Type == "entity" && e.EntityType == "gateway" && slices.Equal(e.Observations, []string{a.observation})
		}
	}
	if !found {
		t.Errorf("server-memory's graph file does not hold the entity %s created through toolshed:\n%s", a.entity, graph)
	}
	if write.Result.IsError {
		t.Errorf("filesystem write_file through toolshed failed: %s", write.Result.text())
	}
	if got, err := os.ReadFile(a.file); err != nil || string(got) != a.content {
		t.Errorf("the file written through toolshed holds %q (%v), want %q", got, err, a.content)
	}
}

// checkClosed checks that the client closed and reported no protocol error but those
// that end with one of ignore.
func checkClosed(t *testing.T, ev sdkEvents, ignore ...string) {
	t.Helper()
	var closing, closed struct{ Errors []string }
	ev.get(t, "closing", &closing)
	ev.get(t, "closed", &closed)
	for _, e := range closing.Errors {
		if !slices.ContainsFunc(ignore, func(s string) bool { return strings.HasSuffix(e, s) }) {
			t.Errorf("the client reported a protocol error: %s", e)
		}
	}
	for _, e := range closed.Errors {
		t.Logf("while closing, the client reported: %s", e)
	}
}

func toolNames(tools []mcpTool) []string {
	var names []string
	for _, x := range tools {
		names = append(names, x.Name)
	}
	sort.Strings(names)
	return names
}

// TestTSSDKTools: tools/list shows the bridge (search on) or every upstream tool under
// its qualified name with the server's own definition (search off); tool_search finds a
// real tool, tool_describe gives its schema, and calls through tool_call or directly
// run it with real effects; a modern-only (MCP 2026-07-28) server beside the old ones
// answers too.
func TestTSSDKTools(t *testing.T) {
	sdkModes(t, func(t *testing.T, mode string) {
		sdkTransports(t, func(t *testing.T, transport string) {
			g := startSDKGateway(t, transport, mode, "everything", "memory", "filesystem", "modern")
			args := newToolCallArgs(g, "the TypeScript SDK")
			plan := args.plan("tools")
			plan["wanted"] = append(plan["wanted"].([]string), "modern__echo")
			plan["modern"] = true
			ev := g.runClient(tssdkScript, transport, plan)

			var list struct{ Tools []mcpTool }
			var direct struct{ Servers map[string][]mcpTool }
			ev.get(t, "list", &list)
			ev.get(t, "direct_list", &direct)
			if mode == "on" {
				if got, want := toolNames(list.Tools), []string{"tool_call", "tool_describe", "tool_search"}; !slices.Equal(got, want) {
					t.Errorf("tools/list with tool search on = %v, want the bridge %v", got, want)
				}
			} else {
				checkQualifiedTools(t, list.Tools, direct.Servers, "modern__echo", "modern__confirm", "modern__ask_llm", "modern__slow")
			}
			if mode == "on" {
				var search, describe struct{ Result mcpResult }
				ev.get(t, "search", &search)
				ev.get(t, "describe", &describe)
				var found struct {
					Matches []struct{ Name, Server string }
				}
				if err := json.Unmarshal([]byte(search.Result.text()), &found); err != nil || len(found.Matches) == 0 || found.Matches[0].Name != "everything__echo" {
					t.Errorf("tool_search(echo back the input message) = %s, want everything__echo first", search.Result.text())
				}
				var desc mcpTool
				if err := json.Unmarshal([]byte(describe.Result.text()), &desc); err != nil {
					t.Fatalf("tool_describe(everything__echo) = %s: %v", describe.Result.text(), err)
				}
				echo := findTool(direct.Servers["everything"], "echo")
				if desc.Name != "everything__echo" || !sameJSON(desc.InputSchema, echo.InputSchema) {
					t.Errorf("tool_describe(everything__echo) = %s %s, the server lists %s", desc.Name, desc.InputSchema, echo.InputSchema)
				}
			}
			checkEffects(t, g, ev, args)
			// The modern-only server (MCP 2026-07-28) answers beside the old ones.
			var modern struct{ Result mcpResult }
			ev.get(t, "modern", &modern)
			if want := []map[string]any{{"type": "text", "text": args.message}}; modern.Result.IsError || !reflect.DeepEqual(modern.Result.Content, want) {
				t.Errorf("modern__echo through toolshed = %+v, want content %v", modern.Result, want)
			}
			checkClosed(t, ev)
		})
	})
}

func findTool(tools []mcpTool, name string) mcpTool {
	for _, x := range tools {
		if x.Name == name {
			return x
		}
	}
	return mcpTool{}
}

// checkQualifiedTools checks that toolshed lists every upstream tool, and nothing else,
// as server__tool with the definition the server itself gives; also are tools of
// servers the client cannot list directly (MCP 2026-07-28 only), which must be listed.
func checkQualifiedTools(t *testing.T, listed []mcpTool, direct map[string][]mcpTool, also ...string) {
	t.Helper()
	want := map[string]mcpTool{}
	for server, tools := range direct {
		if len(tools) == 0 {
			t.Errorf("the direct connection to %s listed no tools", server)
		}
		for _, x := range tools {
			want[server+"__"+x.Name] = x
		}
	}
	got := map[string]mcpTool{}
	for _, x := range listed {
		got[x.Name] = x
	}
	for name, d := range want {
		x, ok := got[name]
		if !ok {
			t.Errorf("tools/list with tool search off lacks %s", name)
			continue
		}
		if x.Title != d.Title || x.Description != d.Description || !sameJSON(x.InputSchema, d.InputSchema) || !sameJSON(x.OutputSchema, d.OutputSchema) {
			t.Errorf("toolshed lists %s as\n%+v\nthe server lists it as\n%+v", name, x, d)
		}
	}
	for _, name := range also {
		if _, ok := got[name]; !ok {
			t.Errorf("tools/list with tool search off lacks %s", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && !slices.Contains(also, name) {
			t.Errorf("tools/list with tool search off has %s, which its server does not list to a client with this client's capabilities", name)
		}
	}
}

// TestTSSDKProgress: a call with a progress token to server-everything's
// trigger-long-running-operation delivers the upstream's notifications/progress to the
// client under the client's own token, in order, before the result.
func TestTSSDKProgress(t *testing.T) {
	sdkModes(t, func(t *testing.T, mode string) {
		sdkTransports(t, func(t *testing.T, transport string) {
			g := startSDKGateway(t, transport, mode, "everything")
			ev := g.runClient(tssdkScript, transport, map[string]any{"scenario": "progress"})
			var p struct {
				Request   wireMessage
				Exchange  []wireEntry
				After     []json.RawMessage
				Callbacks []struct{ Progress, Total float64 }
				Result    mcpResult
			}
			ev.get(t, "progress", &p)
			checkProgress(t, p.Request, p.Exchange, 4)
			if len(p.After) > 0 {
				t.Errorf("progress notifications after the result: %s", p.After)
			}
			// The wire order is toolshed's (checked above). What the SDK makes of it is
			// its own: it hands notifications to their handlers in a microtask
			// (Protocol._onnotification) but handles a response at once, so when the
			// last progress notification and the result arrive in one read from the
			// pipe, the response retires the progress handler first, and the SDK
			// reports the progress as "for an unknown token". Upstreams that send
			// their last progress right before the result (server-everything does)
			// meet the same race without toolshed.
			var race []string
			switch {
			case len(p.Callbacks) == 4:
			case len(p.Callbacks) == 3 && p.Callbacks[2].Progress == 3:
				race = append(race, `"params":{"progress":4,"total":4,"progressToken":`+string(p.Request.progressToken())+`}}`)
				t.Logf("the SDK dropped the last progress notification, which came in one read with the result (its own race; the wire order was right)")
			default:
				t.Errorf("the SDK called onprogress %d times (%v), want 4", len(p.Callbacks), p.Callbacks)
			}
			if want := "Long running operation completed. Duration: 2 seconds, Steps: 4."; p.Result.IsError || p.Result.text() != want {
				t.Errorf("result = %+v, want %q", p.Result, want)
			}
			checkClosed(t, ev, race...)
		})
	})
}

// wireMessage is a JSON-RPC message as the client's transport saw it.
type wireMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// progressToken is the progress token of a request, as JSON, or nil.
func (m wireMessage) progressToken() json.RawMessage {
	var params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(m.Params, &params)
	return params.Meta["progressToken"]
}

// wireEntry is a message the client sent ("out") or received ("in").
type wireEntry struct {
	Dir     string
	Message wireMessage
}

// checkProgress checks the messages from a request to its response: steps progress
// notifications that carry exactly the request's progress token, counting up to steps
// of steps, then the response.
func checkProgress(t *testing.T, req wireMessage, exchange []wireEntry, steps int) {
	t.Helper()
	token := req.progressToken()
	if len(token) == 0 {
		t.Fatalf("the client sent no progress token: %s", req.Params)
	}
	if len(exchange) == 0 {
		t.Fatalf("no exchange recorded for request %s", req.ID)
	}
	last := exchange[len(exchange)-1]
	if last.Dir != "in" || !bytes.Equal(last.Message.ID, req.ID) || last.Message.Method != "" {
		t.Fatalf("the exchange of request %s does not end with its response: %+v", req.ID, last)
	}
	var got []float64
	for _, m := range exchange[:len(exchange)-1] {
		if m.Dir != "in" || m.Message.Method != "notifications/progress" {
			continue
		}
		var n struct {
			ProgressToken json.RawMessage `json:"progressToken"`
			Progress      float64         `json:"progress"`
			Total         float64         `json:"total"`
		}
		json.Unmarshal(m.Message.Params, &n)
		if !bytes.Equal(n.ProgressToken, token) {
			t.Errorf("progress notification with token %s, the client's token is %s: %s", n.ProgressToken, token, m.Message.Params)
		}
		if n.Total != float64(steps) {
			t.Errorf("progress notification with total %v, want %d: %s", n.Total, steps, m.Message.Params)
		}
		got = append(got, n.Progress)
	}
	var want []float64
	for i := 1; i <= steps; i++ {
		want = append(want, float64(i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("progress before the result = %v, want %v", got, want)
	}
}

// TestTSSDKCancel: the client aborts a long call (AbortSignal); it gets its
// cancellation, the upstream receives notifications/cancelled for the call toolshed
// made, and toolshed goes on serving.
func TestTSSDKCancel(t *testing.T) {
	sdkModes(t, func(t *testing.T, mode string) {
		sdkTransports(t, func(t *testing.T, transport string) {
			g := startSDKGateway(t, transport, mode, "everything", "recorder")
			ev := g.runClient(tssdkScript, transport, map[string]any{"scenario": "cancel"})
			var c struct {
				Error         *string
				Request       wireMessage
				Notifications []wireMessage
			}
			ev.get(t, "cancelled", &c)
			if c.Error == nil || !strings.Contains(*c.Error, "the test cancels the call") {
				t.Errorf("the aborted call ended with error %v, want the abort reason", c.Error)
			}
			sent := false
			for _, n := range c.Notifications {
				var p struct{ RequestID json.RawMessage }
				json.Unmarshal(n.Params, &p)
				sent = sent || bytes.Equal(p.RequestID, c.Request.ID)
			}
			if !sent {
				t.Errorf("the client sent no notifications/cancelled for request %s: %+v", c.Request.ID, c.Notifications)
			}
			var after struct {
				Ping, Echo mcpResult
				Late       []json.RawMessage
			}
			ev.get(t, "after", &after)
			if after.Ping.IsError || after.Ping.text() != "pong" {
				t.Errorf("the call after the cancellation = %+v, want pong", after.Ping)
			}
			if after.Echo.IsError || after.Echo.text() != "Echo: still serving" {
				t.Errorf("echo after the cancellation = %+v", after.Echo)
			}
			ignore := checkLateAnswer(t, transport, after.Late)
			checkUpstreamCancelled(t, g)
			checkClosed(t, ev, ignore...)
		})
	})
}

// checkLateAnswer checks that toolshed does not answer a request the client cancelled,
// as the MCP cancellation utility asks, and returns the client's report of such an
// answer to ignore where it is a known defect of the Go SDK. Over stdio toolshed drops
// the answer the SDK writes; over Streamable HTTP it cannot (the SDK owns the stream),
// and the answer is an error (modelcontextprotocol/go-sdk#1235, #1259; fix proposed in
// go-sdk#1267).
func checkLateAnswer(t *testing.T, transport string, late []json.RawMessage) (ignore []string) {
	t.Helper()
	if len(late) == 0 {
		return nil
	}
	if transport == "stdio" {
		t.Errorf("toolshed answered the cancelled request: %s", late)
		return nil
	}
	for _, m := range late {
		var msg wireMessage
		json.Unmarshal(m, &msg)
		if msg.Error == nil || msg.Result != nil {
			t.Errorf("toolshed answered the cancelled request with a result: %s", m)
			continue
		}
		t.Logf("known Go SDK defect (go-sdk#1259): over Streamable HTTP the cancelled request is still answered: %s", m)
		ignore = append(ignore, "Received a response for an unknown message ID: "+string(m))
	}
	return ignore
}

// TestTSSDKCloseDuringCall: the client goes away with a call in flight (closes stdin;
// ends its HTTP session with DELETE). toolshed cancels the call upstream and exits by
// itself (stdio) or ends the session (HTTP) without waiting for the call, and leaves
// no process behind.
func TestTSSDKCloseDuringCall(t *testing.T) {
	sdkTransports(t, func(t *testing.T, transport string) {
		g := startSDKGateway(t, transport, "off", "recorder")
		ev := g.runClient(tssdkScript, transport, map[string]any{"scenario": "close"})
		var c struct {
			Result *mcpResult
			Error  *string
		}
		ev.get(t, "call", &c)
		if c.Result != nil && !c.Result.IsError {
			t.Errorf("the call in flight when the client closed ended with a result: %+v", c.Result)
		}
		if transport == "stdio" {
			var exit struct {
				Toolshed *struct {
					Code   *int
					Signal *string
				}
			}
			ev.get(t, "exit", &exit)
			if x := exit.Toolshed; x == nil || x.Signal != nil || x.Code == nil || *x.Code != 0 {
				t.Errorf("toolshed did not exit by itself once the client closed stdin: %+v", x)
			}
		}
		checkUpstreamCancelled(t, g)
		checkClosed(t, ev)
	})
}

// checkUpstreamCancelled checks that the recorder received a block call and then
// notifications/cancelled naming it, and that its handler saw the cancellation.
func checkUpstreamCancelled(t *testing.T, g *sdkGateway) {
	t.Helper()
	var blockID json.RawMessage
	cancelled := func(msgs []recorderMessage, events []string) bool {
		blockID = nil
		for _, m := range msgs {
			if m.Dir != "read" {
				continue
			}
			var p struct {
				Name      string
				RequestID json.RawMessage
			}
			json.Unmarshal(m.Params, &p)
			switch {
			case m.Method == "tools/call" && p.Name == "block":
				blockID = m.ID
			case m.Method == "notifications/cancelled" && blockID != nil && bytes.Equal(p.RequestID, blockID):
				return slices.Contains(events, "block ended: context canceled")
			}
		}
		return false
	}
	msgs, events := waitRecorder(t, g.recorderLog, cancelled)
	if !cancelled(msgs, events) {
		var lines []string
		for _, m := range msgs {
			lines = append(lines, m.Dir+" "+m.Method+" "+string(m.ID)+" "+string(m.Params))
		}
		t.Errorf("the upstream did not get notifications/cancelled for its block call (id %s); it read:\n%s\nits handler saw: %q", blockID, strings.Join(lines, "\n"), events)
	}
}

// TestTSSDKResources: resources/list, resources/read of a listed text resource and of
// templated text and blob resources, resources/templates/list, and a subscription whose
// notifications/resources/updated come through.
func TestTSSDKResources(t *testing.T) {
	sdkTransports(t, func(t *testing.T, transport string) {
		g := startSDKGateway(t, transport, "on", "everything")
		const doc = "features.md"
		plan := map[string]any{
			"scenario":     "resources",
			"textURI":      "demo://resource/static/document/" + doc,
			"templateURI":  "demo://resource/dynamic/text/2",
			"blobURI":      "demo://resource/dynamic/blob/1",
			"subscribeURI": "demo://resource/dynamic/text/1",
		}
		ev := g.runClient(tssdkScript, transport, plan)

		var list struct{ Resources []json.RawMessage }
		var templates struct{ ResourceTemplates []json.RawMessage }
		var direct struct{ Resources, Templates []json.RawMessage }
		ev.get(t, "list", &list)
		ev.get(t, "templates", &templates)
		ev.get(t, "direct", &direct)
		if len(direct.Resources) == 0 || len(direct.Templates) == 0 {
			t.Fatalf("server-everything itself lists %d resources and %d templates", len(direct.Resources), len(direct.Templates))
		}
		sameSet(t, "resources/list", list.Resources, direct.Resources)
		sameSet(t, "resources/templates/list", templates.ResourceTemplates, direct.Templates)

		type contents struct {
			Contents []struct{ URI, MimeType, Text, Blob string }
		}
		var text, tmpl, blob contents
		ev.get(t, "read_text", &text)
		ev.get(t, "read_template", &tmpl)
		ev.get(t, "read_blob", &blob)
		want, err := os.ReadFile(testupstream.EverythingFile(t, "dist/docs/"+doc))
		if err != nil {
			t.Fatal(err)
		}
		if len(text.Contents) != 1 || text.Contents[0].Text != string(want) || text.Contents[0].URI != plan["textURI"] || text.Contents[0].MimeType != "text/markdown" {
			t.Errorf("resources/read %s = %.300v, want the file's %d bytes as text/markdown", plan["textURI"], text.Contents, len(want))
		}
		if len(tmpl.Contents) != 1 || !strings.HasPrefix(tmpl.Contents[0].Text, "Resource 2: This is a plaintext resource created at") {
			t.Errorf("resources/read %s = %+v", plan["templateURI"], tmpl.Contents)
		}
		if len(blob.Contents) != 1 || blob.Contents[0].Text != "" || blob.Contents[0].URI != plan["blobURI"] {
			t.Errorf("resources/read %s = %+v, want one blob", plan["blobURI"], blob.Contents)
		} else if data, err := base64.StdEncoding.DecodeString(blob.Contents[0].Blob); err != nil || !strings.HasPrefix(string(data), "Resource 1: This is a base64 blob created at") {
			t.Errorf("resources/read %s: blob %q decodes to %q (%v)", plan["blobURI"], blob.Contents[0].Blob, data, err)
		}

		var sub struct {
			Outcome string
			Updates []struct{ URI string }
			On, Off mcpResult
		}
		ev.get(t, "subscribe", &sub)
		if sub.Outcome != "updated" {
			t.Errorf("no notifications/resources/updated for %s came within a minute of subscribing and turning updates on (%s); updates: %+v", plan["subscribeURI"], sub.On.text(), sub.Updates)
		}
		for _, u := range sub.Updates {
			if u.URI != plan["subscribeURI"] {
				t.Errorf("notifications/resources/updated for %s, which the client did not subscribe to", u.URI)
			}
		}
		if !strings.HasPrefix(sub.On.text(), "Started") || !strings.HasPrefix(sub.Off.text(), "Stopped") {
			t.Errorf("toggle-subscriber-updates = %q, then %q", sub.On.text(), sub.Off.text())
		}
		checkClosed(t, ev)
	})
}

// sameSet checks that got and want hold the same JSON values, in any order.
func sameSet(t *testing.T, what string, got, want []json.RawMessage) {
	t.Helper()
	norm := func(xs []json.RawMessage) []string {
		var out []string
		for _, x := range xs {
			var v any
			json.Unmarshal(x, &v)
			b, _ := json.Marshal(v)
			out = append(out, string(b))
		}
		sort.Strings(out)
		return out
	}
	if g, w := norm(got), norm(want); !slices.Equal(g, w) {
		t.Errorf("%s through toolshed:\n%s\nthe server itself:\n%s", what, strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// withoutRequiredFalse encodes a prompt without the "required": false of its
// arguments, which the Go SDK's PromptArgument drops (omitempty) as toolshed relays a
// prompt, and which means what its absence means.
func withoutRequiredFalse(t *testing.T, prompt map[string]json.RawMessage) json.RawMessage {
	t.Helper()
	var args []map[string]any
	if raw, ok := prompt["arguments"]; ok {
		if err := json.Unmarshal(raw, &args); err != nil {
			t.Fatalf("prompt arguments %s: %v", raw, err)
		}
	}
	out := map[string]any{}
	for k, v := range prompt {
		out[k] = v
	}
	for _, a := range args {
		if a["required"] == false {
			delete(a, "required")
		}
	}
	if args != nil {
		out["arguments"] = args
	}
	b, _ := json.Marshal(out)
	return b
}

// TestTSSDKPrompts: prompts/list shows the upstream's prompts under qualified names
// with their arguments, and prompts/get with arguments gives the server's own messages.
func TestTSSDKPrompts(t *testing.T) {
	sdkTransports(t, func(t *testing.T, transport string) {
		g := startSDKGateway(t, transport, "on", "everything")
		args := map[string]string{"city": "Seoul", "state": "Gyeonggi \"道\""}
		ev := g.runClient(tssdkScript, transport, map[string]any{"scenario": "prompts", "promptArgs": args})

		var list, direct struct{ Prompts []map[string]json.RawMessage }
		ev.get(t, "list", &list)
		ev.get(t, "direct_list", &direct)
		if len(direct.Prompts) == 0 {
			t.Fatal("server-everything itself lists no prompts")
		}
		var qualified []json.RawMessage
		for _, p := range direct.Prompts {
			var name string
			json.Unmarshal(p["name"], &name)
			q := map[string]json.RawMessage{}
			for k, v := range p {
				q[k] = v
			}
			q["name"], _ = json.Marshal("everything__" + name)
			qualified = append(qualified, withoutRequiredFalse(t, q))
		}
		var listed []json.RawMessage
		for _, p := range list.Prompts {
			listed = append(listed, withoutRequiredFalse(t, p))
		}
		sameSet(t, "prompts/list", listed, qualified)

		var got, want struct{ Messages []json.RawMessage }
		ev.get(t, "args", &got)
		ev.get(t, "direct_args", &want)
		if len(want.Messages) == 0 || !slices.EqualFunc(got.Messages, want.Messages, func(a, b json.RawMessage) bool { return sameJSON(a, b) }) {
			t.Errorf("prompts/get everything__args-prompt through toolshed = %s, the server gives %s", got.Messages, want.Messages)
		}
		var msg struct{ Content struct{ Text string } }
		if len(got.Messages) > 0 {
			json.Unmarshal(got.Messages[0], &msg)
		}
		if w := `What's weather in Seoul, Gyeonggi "道"?`; msg.Content.Text != w {
			t.Errorf("prompts/get everything__args-prompt text = %q, want %q", msg.Content.Text, w)
		}
		var simple struct{ Messages []json.RawMessage }
		ev.get(t, "simple", &simple)
		if len(simple.Messages) == 0 {
			t.Errorf("prompts/get everything__simple-prompt gave no messages")
		}
		var unknown struct{ Error *string }
		ev.get(t, "unknown", &unknown)
		if unknown.Error == nil || !strings.Contains(*unknown.Error, "everything__no-such-prompt") {
			t.Errorf("prompts/get of an unknown prompt = error %v, want one naming it", unknown.Error)
		}
		checkClosed(t, ev)
	})
}
