package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call whose first request was answered with input_required and then retried on
// the same context ends with the retry's result, not the first one.
func TestResultSinkTakesTheLastResult(t *testing.T) {
	s := &resultSink{}
	s.expect(`1`)
	s.offer([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}`))
	s.expect(`2`)
	if !s.expecting() {
		t.Fatal("the sink does not expect the retry's result")
	}
	s.offer([]byte(`{"jsonrpc":"2.0","id":1,"result":{"late":"answer to the first"}}`))
	s.offer([]byte(`{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete"}}`))
	if got := string(s.result()); got != `{"resultType":"complete"}` {
		t.Errorf("the sink holds %s, want the retry's result", got)
	}
}

// toolshed's requestState binds the call, the principal and the tool: any change to
// one of them, or to the state, fails the check.
func TestRequestState(t *testing.T) {
	who := principal{profile: "a", cred: credential{1}}
	c := &call{id: "toolshed-1-x", principal: who, tool: "s__t"}
	state := newRequestState(c)
	if !checkRequestState(state, who, "s__t") {
		t.Fatal("a state does not check for its own call")
	}
	if again := newRequestState(c); again == state {
		t.Error("two rounds of one call got the same state")
	}
	for name, tc := range map[string]struct {
		state string
		who   principal
		tool  string
	}{
		"other profile":    {state, principal{profile: "b", cred: credential{1}}, "s__t"},
		"other credential": {state, principal{profile: "a", cred: credential{2}}, "s__t"},
		"other tool":       {state, who, "s__u"},
		"other call":       {strings.Replace(state, "toolshed-1-x", "toolshed-2-x", 1), who, "s__t"},
		"no MAC":           {c.id, who, "s__t"},
		"empty":            {"", who, "s__t"},
		"truncated MAC":    {state[:len(state)-2], who, "s__t"},
	} {
		if checkRequestState(tc.state, tc.who, tc.tool) {
			t.Errorf("%s: the state checks", name)
		}
	}
}

// An upstream's input_required result is read with its questions and state, and one
// toolshed cannot relay is refused saying why; answers to questions never asked are
// dropped.
func TestParseInputNeed(t *testing.T) {
	need, err := parseInputNeed("s", json.RawMessage(`{"resultType":"input_required","requestState":"r1","inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object"}}}}}`))
	if err != nil || need.state != "r1" || len(need.requests) != 1 {
		t.Fatalf("need %+v, %v", need, err)
	}
	got := need.answers(mcp.InputResponseMap{"ok": &mcp.ElicitResult{Action: "accept"}, "smuggled": &mcp.ElicitResult{Action: "accept"}})
	if len(got) != 1 || got["ok"] == nil {
		t.Errorf("answers kept %v, want only ok", got)
	}
	for raw, why := range map[string]string{
		`{"inputRequests":{"x":{"method":"tools/call","params":{}}}}`:         `asks for "tools/call"`,
		`{"inputRequests":{"x":null}}`:                                        `asks for ""`,
		`{"inputRequests":{"x":{"method":"elicitation/create","params":[]}}}`: "params that cannot be read",
		`{"inputRequests":[1]}`:                                               "inputRequests cannot be read",
		`{"inputRequests":{}}`:                                                "asked for no input",
		`{"resultType":"input_required"}`:                                     "asked for no input",
		`{"inputRequests":{"ok":{"method":"roots/list"}},"requestState":"` + strings.Repeat("s", maxUpstreamState+1) + `"}`: "more than the 65536",
		`[]`: "result cannot be read",
	} {
		if _, err := parseInputNeed("s", json.RawMessage(raw)); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%.60s: %v, want an error saying %q", raw, err, why)
		}
	}
}

// Whatever an upstream answers, reading it as an input need does not panic, and a need
// it returns is one toolshed can hold and ask.
func FuzzParseInputNeed(f *testing.F) {
	f.Add([]byte(`{"requestState":"r","inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"m"}}}}`))
	f.Add([]byte(`{"inputRequests":{"l":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}}}`))
	f.Add([]byte(`{"inputRequests":{"r":{"method":"roots/list"}},"requestState":null}`))
	f.Add([]byte(`{"inputRequests":{"x":null}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		need, err := parseInputNeed("s", raw)
		if err == nil && (len(need.requests) == 0 || len(need.state) > maxUpstreamState) {
			t.Errorf("%s: need %+v", raw, need)
		}
	})
}

// One principal holds at most maxSuspended calls waiting for its answers; another
// principal is not held up by it, and an answered call frees its place.
func TestSuspendBound(t *testing.T) {
	r := &callRegistry{pending: map[string]*call{}, suspended: map[principal]int{}}
	a, b := principal{profile: "a"}, principal{profile: "b"}
	ask := mcp.InputRequestMap{"ok": &mcp.ElicitParams{Message: "?"}}
	var calls []*call
	suspend := func(who principal) error {
		c := &call{id: fmt.Sprintf("toolshed-%d", len(calls)), principal: who, tool: "s__t"}
		_, err := r.suspend(c, ask)
		if err == nil {
			calls = append(calls, c)
		}
		return err
	}
	t.Cleanup(func() {
		for _, c := range calls {
			c.expiry.Stop()
		}
	})
	for i := range maxSuspended {
		if err := suspend(a); err != nil {
			t.Fatalf("call %d of a: %v", i, err)
		}
	}
	if err := suspend(a); !errors.Is(err, ErrInputNotRelayed) || !strings.Contains(err.Error(), "waiting for its answers already") {
		t.Errorf("a call past the bound: %v", err)
	}
	if err := suspend(b); err != nil {
		t.Errorf("another principal's call: %v", err)
	}
	r.mu.Lock()
	r.unsuspend(calls[0])
	r.mu.Unlock()
	if err := suspend(a); err != nil {
		t.Errorf("a call once one was answered: %v", err)
	}
	if len(r.pending) != maxSuspended+1 || r.suspended[a] != maxSuspended || r.suspended[b] != 1 {
		t.Errorf("pending %d, suspended %v", len(r.pending), r.suspended)
	}
}

// The approval questions waiting for answers are bounded, oldest dropped first (see
// TestApprovalsPerPrincipal for one principal's share), and one
// answers only the call it was asked for, once, until it expires.
func TestApprovals(t *testing.T) {
	var a approvals
	who := principal{profile: "a", cred: credential{1}}
	now := time.Now()
	first := a.issue(approvalStatePrefix, who, "s__t", []byte(`{"x":1}`), now)
	for i := 0; i < maxApprovals; i++ { // many principals: the bound of the whole table
		a.issue(approvalStatePrefix, principal{profile: "a", cred: credential{2, byte(i), byte(i >> 8)}}, "s__t", []byte(`{}`), now)
	}
	if len(a.asked) != maxApprovals || a.take(first, who, "s__t", []byte(`{"x":1}`), now) {
		t.Errorf("%d questions kept, the oldest among them: want %d, the oldest dropped", len(a.asked), maxApprovals)
	}
	for i := 0; i < 3*maxApprovals; i++ { // answered ones behind live ones
		state := a.issue(approvalStatePrefix, who, "s__t", []byte(`{}`), now)
		if i%2 == 0 && !a.take(state, who, "s__t", []byte(`{}`), now) {
			t.Fatalf("question %d: its own answer refused", i)
		}
	}
	if len(a.asked) > maxApprovals || len(a.order) > 2*maxApprovals+1 {
		t.Errorf("%d questions kept in %d slots, want at most %d", len(a.asked), len(a.order), maxApprovals)
	}
	state := a.issue(approvalStatePrefix, who, "s__t", []byte(`{}`), now)
	for name, c := range map[string]struct {
		who  principal
		tool string
		args string
		at   time.Time
	}{
		"other principal": {principal{profile: "b", cred: credential{1}}, "s__t", `{}`, now},
		"other tool":      {who, "s__u", `{}`, now},
		"other arguments": {who, "s__t", `{"x":2}`, now},
	} {
		if a.take(state, c.who, c.tool, []byte(c.args), c.at) {
			t.Errorf("%s: answer taken", name)
		}
	}
	if a.take(state, who, "s__t", []byte(`{}`), now.Add(pendingTimeout)) {
		t.Error("an expired question's answer was taken")
	}
	state = a.issue(approvalStatePrefix, who, "s__t", []byte(`{}`), now)
	if !a.take(state, who, "s__t", []byte(`{}`), now) || a.take(state, who, "s__t", []byte(`{}`), now) {
		t.Error("want the answer taken once")
	}
}
