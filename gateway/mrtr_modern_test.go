package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// Clients of MCP 2026-07-28 and multi round-trip requests: see mrtr_test.go for the
// upstreams and the clients of the 2025 era.

// modernClient is a client of MCP 2026-07-28 on the gateway's in-memory front, as
// profile: every request carries its envelope, and there is no initialize.
type modernClient struct {
	t    *testing.T
	conn mcp.Connection
	id   int64
}

func newModernClient(t *testing.T, h *harness, profile string) *modernClient {
	return &modernClient{t: t, conn: h.rawClient(profile)}
}

var modernEnvelope = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "modern-test", "version": "1"},
	"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "sampling": map[string]any{}},
}

// mrtrResult is what a modern client reads of a tools/call result.
type mrtrResult struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
	Content       []struct{ Text string }    `json:"content"`
	IsError       bool                       `json:"isError"`
	raw           string
	err           *jsonrpc.Error // the JSON-RPC error answered instead of a result
}

// refused reports whether r is the JSON-RPC refusal of a bad requestState
// (InvalidParams), its message containing want.
func (r mrtrResult) refused(want string) bool {
	return r.err != nil && r.err.Code == jsonrpc.CodeInvalidParams && strings.Contains(r.err.Message, want)
}

func (r mrtrResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// call sends tools/call with the envelope and meta, and params' other members (the
// retry's inputResponses and requestState).
func (m *modernClient) call(tool string, args any, meta map[string]any, params map[string]any) mrtrResult {
	m.t.Helper()
	all := map[string]any{}
	for k, v := range modernEnvelope {
		all[k] = v
	}
	for k, v := range meta {
		all[k] = v
	}
	p := map[string]any{"name": tool, "arguments": args, "_meta": all}
	for k, v := range params {
		p[k] = v
	}
	body, _ := json.Marshal(p)
	m.id++
	id, _ := jsonrpc.MakeID(float64(m.id))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: body}); err != nil {
		m.t.Fatal(err)
	}
	for {
		msg, err := m.conn.Read(ctx)
		if err != nil {
			m.t.Fatalf("reading the answer to %s: %v", tool, err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != id {
			continue
		}
		if resp.Error != nil {
			var je *jsonrpc.Error
			if !errors.As(resp.Error, &je) {
				m.t.Fatalf("%s: %v", tool, resp.Error)
			}
			return mrtrResult{err: je, raw: je.Error()}
		}
		var r mrtrResult
		if err := json.Unmarshal(resp.Result, &r); err != nil {
			m.t.Fatalf("%s: %s: %v", tool, resp.Result, err)
		}
		r.raw = string(resp.Result)
		return r
	}
}

const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// A client of 2026-07-28 gets a modern upstream's question as input_required on its own
// call, under a requestState of toolshed's (never the upstream's), and its retry with
// the answers completes the call: the upstream gets its own requestState back, only
// the answers it asked for, and the client's trace context on every round.
func TestMRTRModernClient(t *testing.T) {
	h, wires := mrtrUpstreams(t, policy.Off, config.Hooks{})
	m := newModernClient(t, h, "")
	trace := map[string]any{"traceparent": traceparent, "tracestate": "vendor=1", "baggage": "k=v"}
	accept := map[string]any{"ok": map[string]any{"action": "accept", "content": map[string]any{"yes": true}},
		"unasked": map[string]any{"action": "accept", "content": map[string]any{"smuggled": true}}}
	for _, server := range []string{"mstdio", "mhttp"} {
		first := m.call(server+"__confirm", map[string]any{"what": "deploy"}, trace, nil)
		if first.ResultType != "input_required" || first.InputRequests["ok"] == nil || !strings.Contains(string(first.InputRequests["ok"]), "Really deploy?") {
			t.Fatalf("%s__confirm = %s, want input_required asking ok", server, first.raw)
		}
		if first.RequestState == "" || strings.Contains(first.RequestState, "round1") || strings.Contains(first.raw, "round1:deploy") {
			t.Errorf("%s: the client got the upstream's requestState: %s", server, first.raw)
		}
		done := m.call(server+"__confirm", map[string]any{"what": "deploy"}, trace, map[string]any{"requestState": first.RequestState, "inputResponses": accept})
		if done.ResultType != "complete" || done.text() != "confirmed=true state=round1:deploy" {
			t.Errorf("%s__confirm retried = %s, want the upstream's completed result", server, done.raw)
		}
		wire := readWire(t, wires[server])
		var calls [][]byte
		for _, line := range bytes.Split(wire, []byte("\n")) {
			if bytes.Contains(line, []byte(`"name":"confirm"`)) {
				calls = append(calls, line)
			}
		}
		if len(calls) != 2 {
			t.Fatalf("%s got confirm %d times, want 2:\n%s", server, len(calls), wire)
		}
		for _, c := range calls {
			for _, want := range []string{`"traceparent":"` + traceparent + `"`, `"tracestate":"vendor=1"`, `"baggage":"k=v"`} {
				if !bytes.Contains(c, []byte(want)) {
					t.Errorf("%s: a round lacks %s:\n%s", server, want, c)
				}
			}
		}
		if retry := calls[1]; !bytes.Contains(retry, []byte(`"requestState":"round1:deploy"`)) || bytes.Contains(retry, []byte("unasked")) ||
			bytes.Contains(retry, []byte(first.RequestState)) {
			t.Errorf("%s's retry, want its own requestState and only the answer it asked:\n%s", server, retry)
		}
	}

	// Sampling, and several rounds, with the go-sdk's server.
	first := m.call("gostdio__test_input_required_result_multi_round", map[string]any{}, nil, nil)
	if first.ResultType != "input_required" || first.InputRequests["step1"] == nil || strings.Contains(first.raw, "round=1") {
		t.Fatalf("multi_round = %s", first.raw)
	}
	second := m.call("gostdio__test_input_required_result_multi_round", map[string]any{}, nil, map[string]any{"requestState": first.RequestState,
		"inputResponses": map[string]any{"step1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}})
	if second.ResultType != "input_required" || second.InputRequests["step2"] == nil || second.RequestState == first.RequestState || strings.Contains(second.raw, "name=Ada") {
		t.Fatalf("multi_round, round 2 = %s", second.raw)
	}
	done := m.call("gostdio__test_input_required_result_multi_round", map[string]any{}, nil, map[string]any{"requestState": second.RequestState,
		"inputResponses": map[string]any{"step2": map[string]any{"action": "accept", "content": map[string]any{"color": "green"}}}})
	if done.text() != "Multi-round complete: Ada likes green" {
		t.Errorf("multi_round, done = %s", done.raw)
	}
	llm := m.call("gohttp__test_input_required_result_sampling", map[string]any{}, nil, nil)
	if llm.ResultType != "input_required" || llm.InputRequests["capital_question"] == nil {
		t.Fatalf("sampling = %s", llm.raw)
	}
	done = m.call("gohttp__test_input_required_result_sampling", map[string]any{}, nil, map[string]any{"requestState": llm.RequestState,
		"inputResponses": map[string]any{"capital_question": map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "Paris"}}}})
	if done.text() != "Sampling response: Paris" {
		t.Errorf("sampling, done = %s", done.raw)
	}
}

// A requestState that is made up, replayed, presented by another principal or for
// another tool ends nowhere: the client is told the call ended or expired, and the
// upstream gets nothing. The call it was made for still completes with its own.
func TestMRTRRequestStateRefused(t *testing.T) {
	h, wires := mrtrUpstreams(t, policy.Off, config.Hooks{})
	a, b := newModernClient(t, h, "a"), newModernClient(t, h, "b")
	accept := map[string]any{"ok": map[string]any{"action": "accept", "content": map[string]any{"yes": true}}}
	confirms := func() int { return bytes.Count(readWire(t, wires["mstdio"]), []byte(`"name":"confirm"`)) }
	refused := func(what string, c *modernClient, tool, state string) {
		t.Helper()
		before := confirms()
		r := c.call(tool, map[string]any{"what": "deploy"}, nil, map[string]any{"requestState": state, "inputResponses": accept})
		if !r.refused("ended or expired") {
			t.Errorf("%s: %s, want the call refused as ended or expired", what, r.raw)
		}
		if n := confirms(); n != before {
			t.Errorf("%s reached the upstream (%d calls of confirm, %d before)", what, n, before)
		}
	}
	first := a.call("mstdio__confirm", map[string]any{"what": "deploy"}, nil, nil)
	if first.ResultType != "input_required" {
		t.Fatalf("confirm = %s", first.raw)
	}
	refused("a made-up state", a, "mstdio__confirm", "toolshed-1-abc.nonce.0000")
	refused("a state with another MAC", a, "mstdio__confirm", first.RequestState[:len(first.RequestState)-4]+"0000")
	refused("another principal's state", b, "mstdio__confirm", first.RequestState)
	refused("the state for another tool", a, "mhttp__confirm", first.RequestState)
	refused("the upstream's own state", a, "mstdio__confirm", "round1:deploy")
	if done := a.call("mstdio__confirm", map[string]any{"what": "deploy"}, nil, map[string]any{"requestState": first.RequestState, "inputResponses": accept}); done.text() != "confirmed=true state=round1:deploy" {
		t.Fatalf("the call's own retry = %s", done.raw)
	}
	refused("a replayed state", a, "mstdio__confirm", first.RequestState)
}

// An old upstream's server-to-client request (elicitation) during a modern client's
// call becomes input_required on that call, under toolshed's requestState; the retry
// with the answer completes it, and only the principal that made the call may retry.
func TestMRTRLegacyUpstreamModernClient(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("legacy", "basic")},
		Profiles: map[string]config.Profile{"a": {}, "b": {}}}, gateway.Options{Mode: policy.Off})
	if st := status(h, "legacy"); st.Protocol == "2026-07-28" {
		t.Fatalf("legacy speaks %s", st.Protocol)
	}
	a, b := newModernClient(t, h, "a"), newModernClient(t, h, "b")
	first := a.call("legacy__elicit", map[string]any{}, nil, nil)
	var key string
	for k := range first.InputRequests {
		key = k
	}
	if first.ResultType != "input_required" || len(first.InputRequests) != 1 || first.RequestState == "" {
		t.Fatalf("legacy__elicit = %s, want input_required with one question", first.raw)
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
	if r := b.call("legacy__elicit", map[string]any{}, nil, map[string]any{"requestState": first.RequestState, "inputResponses": answer}); !r.refused("ended or expired") {
		t.Errorf("another principal's retry = %s, want it refused", r.raw)
	}
	if done := a.call("legacy__elicit", map[string]any{}, nil, map[string]any{"requestState": first.RequestState, "inputResponses": answer}); done.text() != "accept Ada" {
		t.Errorf("legacy__elicit retried = %s, want accept Ada", done.raw)
	}
}

// An approval answers the question toolshed asked, for the call it asked it for, once:
// an answer a call brings without being asked, an answer for other arguments, another
// principal's or a used one runs nothing (the server never sees the call), and the
// answer to the question asked runs the call once.
func TestApprovalBoundToItsQuestion(t *testing.T) {
	h, wires := mrtrUpstreams(t, policy.Off, config.Hooks{Approve: []string{"mstdio__echo"}})
	a, b := newModernClient(t, h, "a"), newModernClient(t, h, "b")
	args := map[string]any{"text": "ship it"}
	accept := map[string]any{"toolshed-approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}
	refused := func(what string, r mrtrResult) {
		t.Helper()
		if !r.refused("did not ask") {
			t.Errorf("%s = %s, want the approval refused as not asked", what, r.raw)
		}
	}

	refused("an answer nobody asked for", a.call("mstdio__echo", args, nil, map[string]any{"inputResponses": accept}))
	asked := a.call("mstdio__echo", args, nil, nil)
	if asked.ResultType != "input_required" || asked.InputRequests["toolshed-approval"] == nil || !strings.HasPrefix(asked.RequestState, "approve.") {
		t.Fatalf("first call = %s, want the approval asked under a state of its own", asked.raw)
	}
	retry := map[string]any{"requestState": asked.RequestState, "inputResponses": accept}
	refused("the answer for other arguments", a.call("mstdio__echo", map[string]any{"text": "rm -rf /"}, nil, retry))
	refused("another principal's retry", b.call("mstdio__echo", args, nil, retry))
	if n := bytes.Count(readWire(t, wires["mstdio"]), []byte(`"name":"echo"`)); n != 0 {
		t.Fatalf("the server got echo %d times before the user's answer came back", n)
	}
	if done := a.call("mstdio__echo", args, nil, retry); done.IsError || !strings.Contains(done.text(), "ship it") {
		t.Errorf("the answer to the question asked = %s, want the call run", done.raw)
	}
	refused("the same answer again", a.call("mstdio__echo", args, nil, retry))
	if n := bytes.Count(readWire(t, wires["mstdio"]), []byte(`"name":"echo"`)); n != 1 {
		t.Errorf("the server got echo %d times, want once", n)
	}
}

// A call suspended for its client's answers (a 2026-07-28 client asked a server's
// question) is not running upstream: a drain does not wait for a client that may never
// come back with the answers (it waited the whole drain timeout before).
func TestSuspendedCallDoesNotHoldDrain(t *testing.T) {
	h, _ := mrtrUpstreams(t, policy.Off, config.Hooks{})
	m := newModernClient(t, h, "")
	if q := m.call("mstdio__confirm", map[string]any{"what": "deploy"}, nil, nil); q.ResultType != "input_required" {
		t.Fatalf("confirm = %s, want the server's question", q.raw)
	}
	if n := h.g.CallsRunning(); n != 0 {
		t.Errorf("%d calls running while the only one waits for its client's answers, want 0", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if left := h.g.Drain(ctx); left != 0 {
		t.Errorf("drain left %d calls running, want 0", left)
	}
}

// Answers a client sends with its first call (MCP 2026-07-28 allows it; a server that
// keeps no state may take them) reach the server, all but toolshed's own approval
// answer; the conformance suite's input-required-result-ignore-extra-params.
func TestMRTROfferedAnswers(t *testing.T) {
	h, wires := mrtrUpstreams(t, policy.Off, config.Hooks{})
	m := newModernClient(t, h, "")
	answers := map[string]any{
		"ok":                map[string]any{"action": "accept", "content": map[string]any{"yes": true}},
		"toolshed-approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}},
	}
	if r := m.call("mstdio__confirm", map[string]any{"what": "deploy"}, nil, map[string]any{"inputResponses": answers}); r.text() != "confirmed=true state=?" {
		t.Errorf("confirm with its answer offered = %s, want it done at once", r.raw)
	}
	if wire := readWire(t, wires["mstdio"]); !bytes.Contains(wire, []byte(`"inputResponses":{"ok"`)) || bytes.Contains(wire, []byte("toolshed-approval")) {
		t.Errorf("the server got:\n%s\nwant the client's answer and not toolshed's", wire)
	}
}
