package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// mrtrUpstreams runs a gateway (in mode) over servers that ask for input through MRTR:
// the TypeScript SDK v2 test server, modern-only, over stdio ("mstdio") and Streamable
// HTTP ("mhttp"), each logging what it receives to the file wires names, and the go-sdk
// conformance everything-server over stdio ("gostdio") and stateless HTTP ("gohttp"),
// which serve 2026-07-28. Profiles "a" and "b" (tokens "token-a" and "token-b" over
// HTTP) see every server.
func mrtrUpstreams(t *testing.T, mode policy.Mode, hooks config.Hooks) (h *harness, wires map[string]string) {
	t.Helper()
	dir := t.TempDir()
	wires = map[string]string{"mstdio": filepath.Join(dir, "mstdio.wire"), "mhttp": filepath.Join(dir, "mhttp.wire")}
	mcmd, margs := testupstream.TS2Stdio(t, "reject", map[string]string{"WIRE_LOG": wires["mstdio"]})
	url := testupstream.TS2HTTP(t, "reject", map[string]string{"WIRE_LOG": wires["mhttp"]})
	h = startGateway(t, &config.Config{Servers: []config.Server{
		{Name: "mstdio", Type: config.Stdio, Command: mcmd, Args: margs},
		{Name: "mhttp", Type: config.HTTP, URL: url},
		{Name: "gostdio", Type: config.Stdio, Command: testupstream.ConformanceServer(t)},
		{Name: "gohttp", Type: config.HTTP, URL: testupstream.ConformanceHTTP(t, "-stateless=true")},
	}, Profiles: map[string]config.Profile{"a": {Token: "token-a"}, "b": {Token: "token-b"}}, Hooks: hooks}, gateway.Options{Mode: mode})
	for _, name := range []string{"mstdio", "mhttp", "gostdio", "gohttp"} {
		if st := status(h, name); st.State != gateway.Ready || st.Protocol != "2026-07-28" {
			t.Fatalf("%s: %+v, want ready at 2026-07-28", name, st)
		}
	}
	return h, wires
}

// oldClientOptions answers elicitations as name with the color blue, and samplings
// with "Paris".
func oldClientOptions(name string, asked *[]string, mu *sync.Mutex) *mcp.ClientOptions {
	note := func(s string) {
		mu.Lock()
		*asked = append(*asked, s)
		mu.Unlock()
	}
	return &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			note("elicit: " + req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"yes": true, "name": name, "color": "blue"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := ""
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					text = tc.Text
				}
			}
			note("sample: " + text)
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "Paris"}}, nil
		},
	}
}

// A client of the 2025 era gets a modern upstream's MRTR questions as the elicitation
// and sampling requests it knows, on its own session, and the call ends with the
// upstream's result to the retry, which carried the upstream's own requestState. A
// client connected beside it that can neither elicit nor sample changes nothing for it:
// each call tells the server what its own client supports.
func TestMRTROldClient(t *testing.T) {
	h, wires := mrtrUpstreams(t, policy.Off, config.Hooks{})
	plain := h.clientVersion("", nil, "2025-11-25")
	var mu sync.Mutex
	var asked []string
	cs := h.clientVersion("", oldClientOptions("Ada", &asked, &mu), "2025-11-25")
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
		ask  string
	}{
		{"mstdio__confirm", map[string]any{"what": "deploy"}, "confirmed=true state=round1:deploy", "elicit: Really deploy?"},
		{"mhttp__confirm", map[string]any{"what": "deploy"}, "confirmed=true state=round1:deploy", "elicit: Really deploy?"},
		{"mstdio__ask_llm", map[string]any{"q": "capital of France?"}, `llm said: {"type":"text","text":"Paris"}`, "sample: capital of France?"},
		{"mhttp__ask_llm", map[string]any{"q": "capital of France?"}, `llm said: {"type":"text","text":"Paris"}`, "sample: capital of France?"},
		{"gostdio__test_input_required_result_elicitation", nil, "Hello, Ada!", "elicit: What is your name?"},
		{"gohttp__test_input_required_result_elicitation", nil, "Hello, Ada!", "elicit: What is your name?"},
		{"gostdio__test_input_required_result_sampling", nil, "Sampling response: Paris", "sample: "},
		{"gohttp__test_input_required_result_multi_round", nil, "Multi-round complete: Ada likes blue", "elicit: Step 2: What is your favorite color?"},
		{"gostdio__test_input_required_result_multi_round", nil, "Multi-round complete: Ada likes blue", "elicit: Step 1: What is your name?"},
	} {
		mu.Lock()
		asked = nil
		mu.Unlock()
		res := call(t, cs, tc.tool, tc.args)
		if res.IsError || resultText(res) != tc.want {
			t.Errorf("%s = %q (isError %v), want %q", tc.tool, resultText(res), res.IsError, tc.want)
		}
		mu.Lock()
		if !slicesHasPrefix(asked, tc.ask) {
			t.Errorf("%s asked the client %q, want %q", tc.tool, asked, tc.ask)
		}
		mu.Unlock()
	}
	for _, server := range []string{"mstdio", "mhttp"} {
		if w := readWire(t, wires[server]); !bytes.Contains(w, []byte(`"requestState":"round1:deploy"`)) || !bytes.Contains(w, []byte(`"inputResponses":{"ok":{"action":"accept"`)) {
			t.Errorf("%s never got the retry with its own requestState and the answer:\n%s", server, w)
		}
	}

	// roots/list: the client's own roots.
	ct, st := mcp.NewInMemoryTransports()
	if _, err := h.g.Connect(context.Background(), st, ""); err != nil {
		t.Fatal(err)
	}
	rooted := mcp.NewClient(&mcp.Implementation{Name: "rooted", Version: "1"}, nil)
	rooted.AddRoots(&mcp.Root{URI: "file:///work/project", Name: "project"})
	rcs, err := rooted.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rcs.Close() })
	if got := resultText(call(t, rcs, "gohttp__test_input_required_result_list_roots", nil)); got != "Client exposed 1 root(s): file:///work/project" {
		t.Errorf("list_roots = %q", got)
	}

	// The server is told that a client that cannot answer cannot: it refuses the call
	// itself, and toolshed asks that client nothing.
	before := bytes.Count(readWire(t, wires["mstdio"]), []byte(`"name":"confirm"`))
	if res := call(t, plain, "mstdio__confirm", map[string]any{"what": "x"}); !res.IsError || !strings.Contains(resultText(res), "capabilit") {
		t.Errorf("confirm for a client without elicitation = %q (%s), want the server's refusal", resultText(res), errorCode(t, res))
	}
	if n := bytes.Count(readWire(t, wires["mstdio"]), []byte(`"name":"confirm"`)); n != before+1 {
		t.Errorf("the server got confirm %d times for a client that cannot answer, want once", n-before)
	}
	// A server that asks it anyway gets the call ended, saying why.
	if res := call(t, plain, "gostdio__test_input_required_result_elicitation", nil); errorCode(t, res) != "input_not_relayed" || !strings.Contains(resultText(res), `asks for elicitation ("user_name"), which this client cannot be asked`) {
		t.Errorf("an elicitation for a client without elicitation = %q (%s)", resultText(res), errorCode(t, res))
	}
}

func slicesHasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// Two principals (two tokens over HTTP, clients of the 2025 era) share one modern
// upstream and call its confirming tool at once: each is asked only its own question,
// and each call ends with its own result. Before MRTR this was the "one principal per
// server" refusal.
func TestMRTRTwoPrincipals(t *testing.T) {
	h, wires := mrtrUpstreams(t, policy.Off, config.Hooks{})
	url := serveHTTP(t, h, gateway.HTTPOptions{})
	const rounds = 3
	var wg sync.WaitGroup
	for _, who := range []string{"a", "b"} {
		var mu sync.Mutex
		var asked []string
		cs := httpClient(t, url+"/mcp/"+who, map[string]string{"Authorization": "Bearer token-" + who}, oldClientOptions(who, &asked, &mu), "2025-11-25")
		for _, server := range []string{"mstdio", "mhttp"} {
			for i := range rounds {
				wg.Add(1)
				go func() {
					defer wg.Done()
					what := fmt.Sprintf("%s-%s-%d", who, server, i)
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server + "__confirm", Arguments: map[string]any{"what": what},
						Meta: mcp.Meta{"traceparent": traceOf(who)}})
					if err != nil || res.IsError || resultText(res) != "confirmed=true state=round1:"+what {
						t.Errorf("%s's call %s: %v %q", who, what, err, resultTextOf(res))
					}
				}()
			}
		}
		t.Cleanup(func() {
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 2*rounds {
				t.Errorf("%s was asked %d questions, want %d: %q", who, len(asked), 2*rounds, asked)
			}
			for _, q := range asked {
				if !strings.HasPrefix(q, "elicit: Really "+who+"-") {
					t.Errorf("%s was asked another's question: %q", who, q)
				}
			}
		})
	}
	wg.Wait()
	for _, server := range []string{"mstdio", "mhttp"} {
		wire := readWire(t, wires[server])
		if n := bytes.Count(wire, []byte(`"inputResponses"`)); n != 2*rounds {
			t.Errorf("%s got %d retries, want %d", server, n, 2*rounds)
		}
		// Each round of each call carries its own caller's trace context.
		for _, line := range bytes.Split(wire, []byte("\n")) {
			for _, who := range []string{"a", "b"} {
				if bytes.Contains(line, []byte(`"what":"`+who+`-`)) && !bytes.Contains(line, []byte(`"traceparent":"`+traceOf(who)+`"`)) {
					t.Errorf("%s: a call of %s without its trace context:\n%s", server, who, line)
				}
			}
		}
	}
}

// traceOf is the traceparent of principal who's calls.
func traceOf(who string) string {
	return "00-" + strings.Repeat(who, 32) + "-b7ad6b7169203331-01"
}

func resultTextOf(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	return resultText(res)
}

// tool_call takes the same path: the old client is asked on its session, the modern
// one gets input_required on its tool_call and retries it; the activity log says via
// tool_call.
func TestMRTRThroughToolCall(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "activity.jsonl")
	h, wires := mrtrUpstreams(t, policy.On, config.Hooks{ActivityLog: logFile})
	var mu sync.Mutex
	var asked []string
	cs := h.clientVersion("", oldClientOptions("Ada", &asked, &mu), "2025-11-25")
	args := map[string]any{"name": "mhttp__confirm", "arguments": map[string]any{"what": "ship"}}
	if res := call(t, cs, "tool_call", args); res.IsError || resultText(res) != "confirmed=true state=round1:ship" {
		t.Errorf("tool_call of confirm, old client = %q", resultText(res))
	}
	m := newModernClient(t, h, "")
	trace := map[string]any{"traceparent": traceparent}
	first := m.call("tool_call", args, trace, nil)
	if first.ResultType != "input_required" || first.InputRequests["ok"] == nil {
		t.Fatalf("tool_call of confirm, modern client = %s", first.raw)
	}
	done := m.call("tool_call", args, trace, map[string]any{"requestState": first.RequestState,
		"inputResponses": map[string]any{"ok": map[string]any{"action": "accept", "content": map[string]any{"yes": false}}}})
	if done.text() != "confirmed=false state=round1:ship" {
		t.Errorf("tool_call of confirm retried = %s", done.raw)
	}
	if w := readWire(t, wires["mhttp"]); bytes.Count(w, []byte(`"traceparent":"`+traceparent+`"`)) != 2 {
		t.Errorf("the trace context did not reach both rounds through tool_call:\n%s", w)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"via":"tool_call"`); n < 2 || strings.Contains(string(data), `"via":"direct"`) {
		t.Errorf("activity log, want the calls via tool_call:\n%s", data)
	}
}

// An upstream's input_required that toolshed cannot relay ends the call with
// input_not_relayed saying why: more rounds than the SDK allows, a requestState over
// toolshed's bound, no question at all. The client is asked nothing it should not be.
func TestMRTRBounds(t *testing.T) {
	s := testServer("bad", "mrtr")
	s.Env[bothErasEnv] = "1"
	h := startGateway(t, &config.Config{Servers: []config.Server{s}}, gateway.Options{Mode: policy.Off})
	if st := status(h, "bad"); st.Protocol != "2026-07-28" {
		t.Fatalf("bad: %+v, want 2026-07-28", st)
	}
	var mu sync.Mutex
	var asked []string
	cs := h.clientVersion("", oldClientOptions("Ada", &asked, &mu), "2025-11-25")
	for _, tc := range []struct {
		tool, why string
		asked     int
	}{
		{"ask_forever", "toolshed relays at most 10 rounds", 10},
		{"big_state", "its requestState is 70000 bytes, more than the 65536", 0},
		{"busy", "it asked for no input", 0},
	} {
		mu.Lock()
		asked = nil
		mu.Unlock()
		res := call(t, cs, "bad__"+tc.tool, map[string]any{})
		if errorCode(t, res) != "input_not_relayed" || !strings.Contains(resultText(res), tc.why) {
			t.Errorf("%s = %q (%s), want input_not_relayed saying %q", tc.tool, resultText(res), errorCode(t, res), tc.why)
		}
		mu.Lock()
		if len(asked) != tc.asked {
			t.Errorf("%s asked the client %d times, want %d", tc.tool, len(asked), tc.asked)
		}
		mu.Unlock()
	}
	if got := resultText(call(t, cs, "bad__count", map[string]any{})); got != `{"ask_forever":11,"big_state":1,"busy":1}` {
		t.Errorf("the server's calls: %s, want ask_forever asked 10 times and given up at its 11th answer", got)
	}
}

// The approval prompt comes first, for old and modern clients alike, then the
// upstream's own question.
func TestMRTRApproval(t *testing.T) {
	h, _ := mrtrUpstreams(t, policy.Off, config.Hooks{Approve: []string{"mstdio__confirm"}})
	var mu sync.Mutex
	var asked []string
	opts := oldClientOptions("Ada", &asked, &mu)
	opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req.Params.Message)
		mu.Unlock()
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "yes": true}}, nil
	}
	cs := h.clientVersion("", opts, "2025-11-25")
	if res := call(t, cs, "mstdio__confirm", map[string]any{"what": "deploy"}); resultText(res) != "confirmed=true state=round1:deploy" {
		t.Errorf("old client: %q", resultText(res))
	}
	if len(asked) != 2 || !strings.HasPrefix(asked[0], "Allow the assistant to call mstdio__confirm") || asked[1] != "Really deploy?" {
		t.Errorf("old client was asked %q, want the approval then the server's question", asked)
	}

	m := newModernClient(t, h, "")
	args := map[string]any{"what": "deploy"}
	approval := m.call("mstdio__confirm", args, nil, nil)
	if approval.ResultType != "input_required" || approval.InputRequests["toolshed-approval"] == nil {
		t.Fatalf("modern client, first = %s, want the approval asked", approval.raw)
	}
	approve := map[string]any{"toolshed-approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}
	question := m.call("mstdio__confirm", args, nil, map[string]any{"requestState": approval.RequestState, "inputResponses": approve})
	if question.ResultType != "input_required" || question.InputRequests["ok"] == nil || question.RequestState == "" {
		t.Fatalf("modern client, approved = %s, want the server's question", question.raw)
	}
	done := m.call("mstdio__confirm", args, nil, map[string]any{"requestState": question.RequestState,
		"inputResponses": map[string]any{"ok": map[string]any{"action": "accept", "content": map[string]any{"yes": true}}}})
	if done.text() != "confirmed=true state=round1:deploy" {
		t.Errorf("modern client, done = %s", done.raw)
	}
}

// A stateless HTTP POST of the 2025 era cannot be asked anything: the server is told
// so (its call refuses the question itself), and a server that asks anyway gets the
// call ended with the reason, never a request sent on a POST that cannot answer it.
func TestMRTRStatelessOldClient(t *testing.T) {
	h, wires := mrtrUpstreams(t, policy.Off, config.Hooks{})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{Stateless: true}) + "/mcp/a"
	post := func(tool, args string) string {
		t.Helper()
		line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
		_, body := rawPOST(t, context.Background(), endpoint, line, map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Authorization": "Bearer token-a"})
		return string(body)
	}
	if body := post("mstdio__confirm", `{"what":"x"}`); !strings.Contains(body, "capabilit") || !strings.Contains(body, `"isError":true`) {
		t.Errorf("confirm over stateless HTTP = %s, want the server's refusal", body)
	}
	if n := bytes.Count(readWire(t, wires["mstdio"]), []byte(`"name":"confirm"`)); n != 1 {
		t.Errorf("the server got confirm %d times, want once", n)
	}
	if body := post("gostdio__test_input_required_result_elicitation", `{}`); !strings.Contains(body, "input_not_relayed") || !strings.Contains(body, "which this client cannot be asked") {
		t.Errorf("an elicitation over stateless HTTP = %s, want input_not_relayed", body)
	}
}

// A 2025 client that cancels its call while it is being asked the server's question
// has the question withdrawn, and the server gets no retry.
func TestMRTROldClientCancels(t *testing.T) {
	h, wires := mrtrUpstreams(t, policy.Off, config.Hooks{})
	asking := make(chan struct{})
	withdrawn := make(chan struct{})
	cs := h.clientVersion("", &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		close(asking)
		<-ctx.Done()
		close(withdrawn)
		return nil, ctx.Err()
	}}, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mstdio__confirm", Arguments: map[string]any{"what": "x"}})
		done <- err
	}()
	select {
	case <-asking:
	case <-time.After(time.Minute):
		t.Fatal("the client was never asked")
	}
	cancel()
	select {
	case <-withdrawn:
	case <-time.After(time.Minute):
		t.Fatal("the question was not withdrawn")
	}
	if err := <-done; err == nil {
		t.Error("the cancelled call returned no error")
	}
	// The call has ended at toolshed, which would have sent a retry by then.
	waitFor(t, "the cancelled call to end", func() bool { return h.g.CallsRunning() == 0 })
	if n := bytes.Count(readWire(t, wires["mstdio"]), []byte(`"name":"confirm"`)); n != 1 {
		t.Errorf("the server got confirm %d times, want once (no retry)", n)
	}
}

// A 2026-07-28 server's prompts/get may ask for input too (SEP-2322 makes MRTR
// universal): a 2025 client is asked on its session (the go-sdk's server asks and
// retries), the retry reaches the server with its inputResponses and requestState, and
// the prompt comes back complete. A 2026-07-28 client gets the question as the server
// wrote it, and its retry the same way (the conformance suite's
// input-required-result-non-tool-request, TestServeConformance2026).
func TestMRTRPromptOldClient(t *testing.T) {
	h, _ := mrtrUpstreams(t, policy.Off, config.Hooks{})
	var asked []string
	cs := h.clientVersion("", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"context": "a deploy"}}, nil
	}}, "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "gostdio__test_input_required_result_prompt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || len(asked) != 1 {
		t.Fatalf("prompt = %+v after %d questions, want one message after one", res, len(asked))
	}
	if text, _ := res.Messages[0].Content.(*mcp.TextContent); text == nil || text.Text != "Context: a deploy" {
		t.Errorf("prompt message = %#v, want the server's, made with the client's answer", res.Messages[0].Content)
	}
}
