package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// taskUpstream runs a gateway over the Tasks extension's test server (a TypeScript SDK
// v2 server over stdio or Streamable HTTP, see testupstream.TS2TaskStdio) as server
// "tasks", with the
// profiles given, and returns it with the file the server logs every line it reads to.
func taskUpstream(t *testing.T, transport string, profiles ...string) (*harness, string) {
	t.Helper()
	wire := filepath.Join(t.TempDir(), "tasks.wire")
	env := map[string]string{"WIRE_LOG": wire}
	server := config.Server{Name: "tasks", Type: config.HTTP}
	if transport == "stdio" {
		server.Type = config.Stdio
		server.Command, server.Args = testupstream.TS2TaskStdio(t, env)
	} else {
		server.URL = testupstream.TS2TaskHTTP(t, env)
	}
	cfg := &config.Config{Servers: []config.Server{server}}
	if len(profiles) > 0 {
		cfg.Profiles = map[string]config.Profile{}
		for _, p := range profiles {
			cfg.Profiles[p] = config.Profile{}
		}
	}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	if st := status(h, "tasks"); st.State != gateway.Ready || st.Protocol != "2026-07-28" {
		t.Fatalf("the tasks server: %+v, want ready at 2026-07-28", st)
	}
	return h, wire
}

// modernCaller drives a raw in-memory connection to the gateway the way a client of
// MCP 2026-07-28 does: every request carries the envelope in its _meta.
type modernCaller struct {
	t    *testing.T
	conn mcp.Connection
	seq  atomic.Int64
	// tasks is whether the envelope declares the Tasks extension.
	tasks bool
	// trace, when set, is sent as the traceparent of each request's _meta.
	trace string
}

func newModernCaller(t *testing.T, h *harness, profile string) *modernCaller {
	return &modernCaller{t: t, conn: h.rawClient(profile), tasks: true}
}

// envelope is the caller's _meta.
func (m *modernCaller) envelope() map[string]any {
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	if m.tasks {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "modern-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	if m.trace != "" {
		meta["traceparent"] = m.trace
	}
	return meta
}

// request sends method with params (the envelope added) and returns the result, or the
// error the gateway answered with.
func (m *modernCaller) request(method string, params map[string]any) (map[string]any, *jsonrpc.Error) {
	m.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = m.envelope()
	raw, err := json.Marshal(params)
	if err != nil {
		m.t.Fatal(err)
	}
	id, _ := jsonrpc.MakeID(fmt.Sprintf("m-%d", m.seq.Add(1)))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		m.t.Fatalf("%s: %v", method, err)
	}
	for {
		msg, err := m.conn.Read(ctx)
		if err != nil {
			m.t.Fatalf("%s: no answer: %v", method, err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != id {
			continue // a notification, or the answer to an earlier request
		}
		if resp.Error != nil {
			var wire *jsonrpc.Error
			if !errors.As(resp.Error, &wire) {
				m.t.Fatalf("%s: error %T %v", method, resp.Error, resp.Error)
			}
			return nil, wire
		}
		var out map[string]any
		if err := json.Unmarshal(resp.Result, &out); err != nil {
			m.t.Fatalf("%s: result %s: %v", method, resp.Result, err)
		}
		return out, nil
	}
}

// must is request that fails the test on an error.
func (m *modernCaller) must(method string, params map[string]any) map[string]any {
	m.t.Helper()
	res, err := m.request(method, params)
	if err != nil {
		m.t.Fatalf("%s %v: error %d %s", method, params, err.Code, err.Message)
	}
	return res
}

// awaitTask polls tasks/get for the task until its status is want.
func (m *modernCaller) awaitTask(id, want string) map[string]any {
	m.t.Helper()
	var last map[string]any
	waitFor(m.t, "task "+id+" "+want, func() bool {
		last = m.must("tasks/get", map[string]any{"taskId": id})
		return last["status"] == want
	})
	return last
}

// wireHas reports whether the upstream read a line holding every one of parts.
// wireCount counts the lines of the wire log that hold every one of parts.
func wireCount(wire string, parts ...string) int {
	data, _ := os.ReadFile(wire)
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		all := line != ""
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

func wireHas(wire string, parts ...string) bool {
	data, _ := os.ReadFile(wire)
	for _, line := range strings.Split(string(data), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all && line != "" {
			return true
		}
	}
	return false
}

// A client of MCP 2026-07-28 that declares the Tasks extension gets the upstream's task
// handle with an id of toolshed's own, and tasks/get, tasks/update and tasks/cancel
// through toolshed reach the upstream's task under its own id.
func TestTasksModernClient(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) { testTasksModernClient(t, transport) })
	}
}

func testTasksModernClient(t *testing.T, transport string) {
	h, wire := taskUpstream(t, transport)
	m := newModernCaller(t, h, "")

	disc := m.must("server/discover", nil)
	caps, _ := disc["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any); ext["io.modelcontextprotocol/tasks"] == nil {
		t.Errorf("server/discover offers %v, want the tasks extension, which the upstream offers", caps)
	}

	handle := m.must("tools/call", map[string]any{"name": "tasks__job", "arguments": map[string]any{"ms": 300}})
	id, _ := handle["taskId"].(string)
	if handle["resultType"] != "task" || !strings.HasPrefix(id, "toolshed-task-") || handle["status"] != "working" || handle["pollIntervalMs"] != float64(50) {
		t.Fatalf("tools/call tasks__job = %v, want a task handle with toolshed's id", handle)
	}
	m.trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	done := m.awaitTask(id, "completed")
	m.trace = ""
	if !wireHas(wire, `"method":"tasks/get"`, `"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`) {
		t.Errorf("the client's trace context did not reach the upstream's tasks/get")
	}
	if wireHas(wire, `"method":"tasks/get"`, `"name":"modern-test"`) {
		t.Errorf("the client's envelope reached the upstream's tasks/get")
	}
	if done["taskId"] != id || !strings.Contains(fmt.Sprint(done["result"]), "job done after 300 ms") {
		t.Errorf("tasks/get of the finished task = %v, want its result under toolshed's id", done)
	}
	if !wireHas(wire, `"method":"tasks/get"`, `"taskId":"task-1"`, `"io.modelcontextprotocol/clientCapabilities":{`, `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Errorf("the upstream never got tasks/get for task-1 with toolshed's envelope declaring the extension")
	}
	if wireHas(wire, id) {
		t.Errorf("toolshed's task id %s reached the upstream", id)
	}

	// tasks/cancel of a running task: an empty ack, the upstream cancels it.
	long := m.must("tools/call", map[string]any{"name": "tasks__job", "arguments": map[string]any{"ms": 60000}})
	longID, _ := long["taskId"].(string)
	if ack := m.must("tasks/cancel", map[string]any{"taskId": longID}); ack["resultType"] != "complete" || ack["taskId"] != nil {
		t.Errorf("tasks/cancel = %v, want the empty ack", ack)
	}
	m.awaitTask(longID, "cancelled")

	// tasks/update carries the answers the upstream asked for, and only those.
	ask := m.must("tools/call", map[string]any{"name": "tasks__ask", "arguments": map[string]any{}})
	askID, _ := ask["taskId"].(string)
	need := m.awaitTask(askID, "input_required")
	if reqs, _ := need["inputRequests"].(map[string]any); reqs["name"] == nil {
		t.Fatalf("tasks/get of the asking task = %v, want inputRequests.name", need)
	}
	m.must("tasks/update", map[string]any{"taskId": askID, "inputResponses": map[string]any{
		"name":   map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
		"forged": map[string]any{"action": "accept", "content": map[string]any{"x": 1}},
	}})
	if done := m.awaitTask(askID, "completed"); !strings.Contains(fmt.Sprint(done["result"]), "hello Ada") {
		t.Errorf("the asking task ended with %v, want hello Ada", done)
	}
	if !wireHas(wire, `"method":"tasks/update"`, `"name":{"action":"accept"`) || wireHas(wire, `"forged"`) {
		t.Errorf("the upstream's tasks/update: want the answer it asked for and no other")
	}

	// Unknown ids, and a caller that did not declare the extension.
	for _, bad := range []string{"task-1", "toolshed-task-nope", ""} {
		if _, err := m.request("tasks/get", map[string]any{"taskId": bad}); err == nil || err.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("tasks/get %q = %v, want invalid params", bad, err)
		}
	}
	m.tasks = false
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if _, err := m.request(method, map[string]any{"taskId": id}); err == nil || err.Code != mcp.CodeMissingRequiredClientCapabilities ||
			!strings.Contains(string(err.Data), `"io.modelcontextprotocol/tasks"`) {
			t.Errorf("%s without the extension declared = %v, want -32021 naming the extension", method, err)
		}
	}
	// A tool that runs only as a task, for a modern caller that did not declare the
	// extension: -32021, and the upstream never sees the call.
	if _, err := m.request("tools/call", map[string]any{"name": "tasks__needs", "arguments": map[string]any{}}); err == nil ||
		err.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(err.Data), `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
		t.Errorf("tools/call tasks__needs without the extension = %v (code %d, data %s), want -32021 with requiredCapabilities.extensions", err, err.Code, err.Data)
	}
	if wireHas(wire, `"name":"needs"`) {
		t.Errorf("the refused call of needs reached the upstream")
	}
	m.tasks = true
	if res := m.must("tools/call", map[string]any{"name": "tasks__needs", "arguments": map[string]any{}}); res["resultType"] != "task" {
		t.Errorf("tools/call tasks__needs with the extension = %v, want a task handle", res)
	}
}

// A task handle is its principal's: another profile's connection gets "unknown task"
// for it, and cannot cancel it.
func TestTasksOtherPrincipal(t *testing.T) {
	h, wire := taskUpstream(t, "stdio", "a", "b")
	a, b := newModernCaller(t, h, "a"), newModernCaller(t, h, "b")
	handle := a.must("tools/call", map[string]any{"name": "tasks__job", "arguments": map[string]any{"ms": 60000}})
	id, _ := handle["taskId"].(string)
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		if _, err := b.request(method, map[string]any{"taskId": id, "inputResponses": map[string]any{}}); err == nil || err.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("profile b's %s of profile a's task = %v, want unknown task", method, err)
		}
	}
	if wireHas(wire, `"method":"tasks/cancel"`) {
		t.Errorf("profile b's tasks/cancel reached the upstream")
	}
	if got := a.must("tasks/get", map[string]any{"taskId": id}); got["status"] != "working" || got["taskId"] != id {
		t.Errorf("profile a's own tasks/get = %v, want its working task", got)
	}
	a.must("tasks/cancel", map[string]any{"taskId": id})
}

// A task's handle names the task on the connection that started it: once its stdio
// server restarted, and numbers its tasks afresh, the handle is an unknown task, and
// never reaches the task of the same id another principal started since.
func TestTasksServerRestarted(t *testing.T) {
	dir := t.TempDir()
	wire, pidFile := filepath.Join(dir, "tasks.wire"), filepath.Join(dir, "pid")
	cmd, args := testupstream.TS2TaskStdio(t, map[string]string{"WIRE_LOG": wire, "PID_FILE": pidFile})
	h := startGateway(t, &config.Config{Servers: []config.Server{{Name: "tasks", Type: config.Stdio, Command: cmd, Args: args}},
		Profiles: map[string]config.Profile{"a": {}, "b": {}}}, gateway.Options{Mode: policy.Off})
	a, b := newModernCaller(t, h, "a"), newModernCaller(t, h, "b")
	old := a.must("tools/call", map[string]any{"name": "tasks__job", "arguments": map[string]any{"ms": 60000}})
	oldID, _ := old["taskId"].(string)
	first, _ := os.ReadFile(pidFile)
	killServer(t, pidFile)
	waitFor(t, "the server to restart", func() bool {
		pid, _ := os.ReadFile(pidFile)
		return string(pid) != string(first) && status(h, "tasks").State == gateway.Ready
	})
	// b's task is task-1 of the new process, as a's was of the old one.
	mine := b.must("tools/call", map[string]any{"name": "tasks__job", "arguments": map[string]any{"ms": 60000}})
	if _, err := a.request("tasks/get", map[string]any{"taskId": oldID}); err == nil || err.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("a's tasks/get of its task from before the restart = %v, want unknown task", err)
	}
	if _, err := a.request("tasks/cancel", map[string]any{"taskId": oldID}); err == nil {
		t.Errorf("a's tasks/cancel of its task from before the restart was taken")
	}
	if got := b.must("tasks/get", map[string]any{"taskId": mine["taskId"]}); got["status"] != "working" {
		t.Errorf("b's own task after the restart: %v, want working (a's cancel must not reach it)", got)
	}
}

// A client of MCP 2025 knows nothing of tasks: it gets the tool's result, which toolshed
// polls the upstream's tasks/get for, the task's input requests as elicitations, and
// its cancellation reaches the upstream as tasks/cancel.
func TestTasksOldClient(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) { testTasksOldClient(t, transport) })
	}
}

func testTasksOldClient(t *testing.T, transport string) {
	h, wire := taskUpstream(t, transport)
	progress := make(chan *mcp.ProgressNotificationParams, 100)
	cs := h.clientVersion("", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if req.Params.Message != "Your name?" {
			return nil, fmt.Errorf("unexpected elicitation %q", req.Params.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
	}, ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		select {
		case progress <- req.Params:
		default:
		}
	}}, "2025-11-25")

	// With a progress token, the client hears how the task goes while toolshed polls.
	const trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tasks__job", Arguments: map[string]any{"ms": 300},
		Meta: mcp.Meta{"progressToken": "p-1", "traceparent": trace}})
	if err != nil || res.IsError || resultText(res) != "job done after 300 ms" {
		t.Fatalf("tasks__job = %v %q (isError %v), want the task's result", err, resultText(res), res != nil && res.IsError)
	}
	select {
	case p := <-progress:
		if p.ProgressToken != "p-1" || p.Message != "the task is working" || p.Progress < 1 {
			t.Errorf("progress during the task: %+v", p)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("no progress reached the client for its task (300 ms, polled every 50 ms)")
	}
	if !wireHas(wire, `"method":"tasks/get"`, `"taskId":"task-1"`, `"traceparent":"`+trace+`"`) {
		t.Errorf("toolshed never polled the upstream's tasks/get with the call's trace context")
	}
	if wireHas(wire, `"method":"tasks/get"`, `"progressToken"`) {
		t.Errorf("the call's progress token went with tasks/get")
	}
	if res := call(t, cs, "tasks__ask", map[string]any{}); res.IsError || resultText(res) != "hello Grace" {
		t.Errorf("tasks__ask = %q (isError %v), want the answer to the elicitation", resultText(res), res.IsError)
	}
	// A tool that runs only as a task works for a client that knows nothing of tasks.
	if res := call(t, cs, "tasks__needs", map[string]any{}); res.IsError || resultText(res) != "needs done" {
		t.Errorf("tasks__needs = %q (isError %v)", resultText(res), res.IsError)
	}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	polls := wireCount(wire, `"method":"tasks/get"`) // the tasks above are done
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tasks__job", Arguments: map[string]any{"ms": 60000}})
		errc <- err
	}()
	// Cancelled while toolshed polls the task: over Streamable HTTP a cancel that
	// comes before the task's handle ends the POST, and the handle never reaches
	// toolshed (over stdio it does, see TestTasksCancelledBeforeHandle).
	waitFor(t, "toolshed to poll the long job", func() bool { return wireCount(wire, `"method":"tasks/get"`) > polls })
	cancel()
	if err := <-errc; err == nil {
		t.Errorf("the cancelled call returned no error")
	}
	waitFor(t, "tasks/cancel upstream", func() bool { return wireHas(wire, `"method":"tasks/cancel"`) })
}

// tokenSession opens a raw MCP session on a Streamable HTTP endpoint with a bearer
// token, and returns a function that POSTs one JSON-RPC request in it and returns the
// JSON-RPC message that answers it.
func tokenSession(t *testing.T, endpoint, token string) func(body string) map[string]any {
	t.Helper()
	var session string
	post := func(body string) map[string]any {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			session = s
		}
		data, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimPrefix(strings.TrimSpace(line), "data:")
			var msg map[string]any
			if json.Unmarshal([]byte(line), &msg) == nil && msg["id"] != nil {
				return msg
			}
		}
		return nil
	}
	post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if session == "" {
		t.Fatalf("no session opened with token %s", token)
	}
	return post
}

// Over Streamable HTTP, a task handle is the token's: a session of another token gets
// "unknown task" for it, the session of its own token the task.
func TestTasksHTTPTokens(t *testing.T) {
	wire := filepath.Join(t.TempDir(), "tasks.wire")
	cmd, args := testupstream.TS2TaskStdio(t, map[string]string{"WIRE_LOG": wire})
	h := startGateway(t, &config.Config{Servers: []config.Server{{Name: "tasks", Type: config.Stdio, Command: cmd, Args: args}},
		Profiles: map[string]config.Profile{"a": {Token: "token-a"}, "b": {Token: "token-b"}}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	a, b := tokenSession(t, endpoint, "token-a"), tokenSession(t, endpoint, "token-b")
	const declared = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

	msg := a(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tasks__job","arguments":{"ms":60000},` + declared + `}}`)
	res, _ := msg["result"].(map[string]any)
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || !strings.HasPrefix(id, "toolshed-task-") {
		t.Fatalf("tools/call with the extension declared = %v, want a task handle", msg)
	}
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `",` + declared + `}}`
	if msg := b(get); msg["error"] == nil || msg["error"].(map[string]any)["code"] != float64(jsonrpc.CodeInvalidParams) {
		t.Errorf("token b's tasks/get of token a's task = %v, want unknown task", msg)
	}
	if msg := b(strings.Replace(get, "tasks/get", "tasks/cancel", 1)); msg["error"] == nil || wireHas(wire, `"method":"tasks/cancel"`) {
		t.Errorf("token b's tasks/cancel of token a's task = %v, or it reached the upstream", msg)
	}
	if msg := a(get); msg["result"] == nil || msg["result"].(map[string]any)["status"] != "working" {
		t.Errorf("token a's tasks/get = %v, want its working task", msg)
	}
	if msg := a(strings.Replace(get, "tasks/get", "tasks/cancel", 1)); msg["result"] == nil || !wireHas(wire, `"method":"tasks/cancel"`) {
		t.Errorf("token a's tasks/cancel = %v, want the ack and the upstream's task cancelled", msg)
	}
}

// A call cancelled before its task handle came: the server that answers it with a
// handle anyway (its answer crossing the cancel) gets tasks/cancel for that task, on
// the connection that started it, so that nothing keeps running for nobody. The test
// server's tool late answers only once it has read the call's notifications/cancelled,
// which makes the race go the same way every time.
func TestTasksCancelledBeforeHandle(t *testing.T) {
	for _, tc := range []struct {
		name string
		// call calls tasks__late, waits until the upstream has read the call, and
		// cancels it.
		call func(t *testing.T, h *harness, wire string)
	}{
		{"2025 client", func(t *testing.T, h *harness, wire string) {
			cs := h.clientVersion("", nil, "2025-11-25")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tasks__late", Arguments: map[string]any{}})
				errc <- err
			}()
			waitFor(t, "the upstream to read the call of late", func() bool { return wireHas(wire, `"name":"late"`) })
			cancel()
			if err := <-errc; err == nil {
				t.Errorf("the cancelled call returned no error")
			}
		}},
		{"2026-07-28 client declaring tasks", func(t *testing.T, h *harness, wire string) {
			m := newModernCaller(t, h, "")
			params, _ := json.Marshal(map[string]any{"name": "tasks__late", "arguments": map[string]any{}, "_meta": m.envelope()})
			id, _ := jsonrpc.MakeID("late-call")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := m.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: params}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the upstream to read the call of late", func() bool { return wireHas(wire, `"name":"late"`) })
			cancelled, _ := json.Marshal(map[string]any{"requestId": "late-call", "reason": "test"})
			if err := m.conn.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: cancelled}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, wire := taskUpstream(t, "stdio")
			tc.call(t, h, wire)
			waitFor(t, "the late handle's task cancelled upstream", func() bool {
				return wireHas(wire, `"method":"tasks/cancel"`, `"taskId":"late-1"`)
			})
			if !wireHas(wire, `"method":"notifications/cancelled"`) {
				t.Errorf("the upstream never read the call's notifications/cancelled")
			}
		})
	}
}

// A task toolshed polls for a client that knows nothing of tasks is listened to
// (subscriptions/listen with notifications.taskIds, on the stdio connection), and its
// notifications/tasks wake the poll: the test server's tool pushed asks to be polled
// once an hour (which the test lets toolshed honour) and completes once listened to, so
// only the notification can end the call.
func TestTasksStatusNotificationWakesPoll(t *testing.T) {
	defer gateway.SetMaxPollInterval(time.Hour)()
	h, wire := taskUpstream(t, "stdio")
	cs := h.clientVersion("", nil, "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tasks__pushed", Arguments: map[string]any{}})
	if err != nil || res.IsError || resultText(res) != "pushed done" {
		t.Fatalf("tasks__pushed = %v %q, want the task's result once its notification woke the poll", err, resultText(res))
	}
	if !wireHas(wire, `"method":"subscriptions/listen"`, `"taskIds":["task-1"]`, `"io.modelcontextprotocol/tasks":{}`) {
		t.Errorf("the upstream never got a subscriptions/listen for task-1 declaring the extension")
	}
	// The poll over, its listen is cancelled.
	waitFor(t, "the task's listen cancelled", func() bool {
		data, _ := os.ReadFile(wire)
		for _, line := range strings.Split(string(data), "\n") {
			var m struct {
				ID     any    `json:"id"`
				Method string `json:"method"`
				Params struct {
					Notifications struct{ TaskIDs []string } `json:"notifications"`
				} `json:"params"`
			}
			if json.Unmarshal([]byte(line), &m) == nil && m.Method == "subscriptions/listen" && len(m.Params.Notifications.TaskIDs) > 0 {
				id, _ := json.Marshal(m.ID)
				return wireHas(wire, `"method":"notifications/cancelled"`, `"requestId":`+string(id))
			}
		}
		return false
	})
}
