package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// The fast path for clients of MCP 2026-07-28: fastCallTranscript's modern fronts run
// modernCallScript, and TestFastCallBytes holds them to the SDK path's bytes.

// modernEnvelopeJSON is the envelope modernCallScript's requests carry, as members of
// their _meta: a client that declares elicitation, and trace context.
const modernEnvelopeJSON = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"traceparent":"` + traceparent + `"`

// modernCallScript is fastCallScript as a client of MCP 2026-07-28 sends it (each
// request with its envelope), and two calls only such a client makes: one that asks
// for a log level (left to the SDK) and a retry with a requestState toolshed never
// issued (refused with InvalidParams).
func modernCallScript(mode policy.Mode) []string {
	var out []string
	for _, line := range fastCallScript(mode) {
		if strings.Contains(line, `"_meta":{`) {
			line = strings.Replace(line, `"_meta":{`, `"_meta":{`+modernEnvelopeJSON+`,`, 1)
		} else {
			line = strings.Replace(line, `"params":{`, `"params":{"_meta":{`+modernEnvelopeJSON+`},`, 1)
		}
		out = append(out, line)
	}
	tool := "alpha__echo"
	if mode == policy.On {
		tool = "tool_search"
	}
	return append(out,
		`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"_meta":{`+modernEnvelopeJSON+`,"io.modelcontextprotocol/logLevel":"debug"},"name":"`+tool+`","arguments":{"text":"x","query":"x"}}}`,
		`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"_meta":{`+modernEnvelopeJSON+`},"name":"`+tool+`","arguments":{"text":"x","query":"x"},"requestState":"forged","inputResponses":{"ok":{"action":"accept"}}}}`)
}

// modernCallHeaders are the headers a client of MCP 2026-07-28 sends a request line with.
func modernCallHeaders(t *testing.T, line string) map[string]string {
	t.Helper()
	var req struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": req.Method, "Mcp-Name": req.Params.Name}
}

// A modern client's MRTR round trip takes the fast path both ways, over stdio and
// HTTP: the call that the upstream answers with input_required, and the client's retry
// with its answers and toolshed's requestState. The client gets toolshed's
// requestState (not the upstream's), its retry reaches the upstream with the
// upstream's own and the client's trace context, and the call completes.
func TestFastCallModernMRTR(t *testing.T) {
	h, wires := mrtrUpstreams(t, policy.Off, config.Hooks{})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	s := newRawLineSession(t, h)
	// The connection's first request joins it (the SDK serves it); calls come after.
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{`+modernEnvelopeJSON+`}}}`)
	s.until(t, "1")
	id := 1
	fronts := map[string]func(line string) string{
		"stdio": func(line string) string {
			s.send(t, line)
			return lastLine(s.until(t, requestID(t, line)))
		},
		"http": func(line string) string {
			headers := modernCallHeaders(t, line)
			headers["Authorization"] = "Bearer token-a" // profile a's (see mrtrUpstreams)
			resp, body := rawPOST(t, context.Background(), endpoint, line, headers)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: %d %s, want 200 application/json", line, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			return body
		},
	}
	for _, front := range []string{"stdio", "http"} {
		send := fronts[front]
		call := func(extra string) mrtrResult {
			id++
			line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":{%s},"name":"mstdio__confirm","arguments":{"what":"deploy"}%s}}`, id, modernEnvelopeJSON, extra)
			var resp struct {
				Result mrtrResult `json:"result"`
			}
			answer := send(line)
			if err := json.Unmarshal([]byte(answer), &resp); err != nil {
				t.Fatalf("%s: %s: %v", front, answer, err)
			}
			resp.Result.raw = answer
			return resp.Result
		}
		before := gateway.FastCallsServed()
		first := call("")
		if first.ResultType != "input_required" || first.InputRequests["ok"] == nil || first.RequestState == "" || strings.Contains(first.raw, "round1") {
			t.Fatalf("%s: the call = %s, want input_required asking ok, under toolshed's requestState", front, first.raw)
		}
		state, _ := json.Marshal(first.RequestState)
		done := call(`,"requestState":` + string(state) + `,"inputResponses":{"ok":{"action":"accept","content":{"yes":true}}}`)
		if done.ResultType != "complete" || done.text() != "confirmed=true state=round1:deploy" || !strings.Contains(done.raw, `"io.modelcontextprotocol/serverInfo":{"name":"toolshed"`) {
			t.Errorf("%s: the retry = %s, want the upstream's completed result, from toolshed", front, done.raw)
		}
		if served := gateway.FastCallsServed() - before; served != 2 {
			t.Errorf("%s: the fast path served %d of the round trip's 2 calls", front, served)
		}
	}
	var retries int
	for _, line := range bytes.Split(readWire(t, wires["mstdio"]), []byte("\n")) {
		if bytes.Contains(line, []byte(`"name":"confirm"`)) && bytes.Contains(line, []byte(`"requestState":"round1:deploy"`)) {
			retries++
			if !bytes.Contains(line, []byte(traceparent)) || bytes.Contains(line, []byte(`"name":"raw"`)) {
				t.Errorf("a retry reached the upstream without the client's trace context, or with its envelope:\n%s", line)
			}
		}
	}
	if retries != 2 {
		t.Errorf("the upstream got %d retries with its requestState, want 2", retries)
	}
}
