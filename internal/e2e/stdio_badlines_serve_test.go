//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestServeStdioAnswersBadLines sends toolshed serve, over its real stdin, lines that
// are not JSON-RPC messages, before and after the handshake: each gets a JSON-RPC
// error (-32700 when it is not JSON, -32600 when it is JSON but no message), and the
// gateway keeps serving the requests that follow.
func TestServeStdioAnswersBadLines(t *testing.T) {
	c := startStdioWire(t, toolshedBin, "serve")
	bad := []struct {
		line   string
		code   int
		id     string
		reason string
	}{
		{`this is not json`, -32700, "", "Parse error"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700, "", "Parse error"},
		{`{"hello":"world"}`, -32600, "", "Invalid Request"},
		{`42`, -32600, "", "Invalid Request"},
		{`[]`, -32600, "", "Invalid Request"},
		{`{"jsonrpc":"2.0"}`, -32600, "", "Invalid Request"},
		{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7", "Invalid Request"},
		{`{"jsonrpc":"2.0","id":"x-8","method":5}`, -32600, `"x-8"`, "Invalid Request"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "", "Invalid Request"},
	}
	send := func(when string) {
		t.Helper()
		for _, b := range bad {
			fmt.Fprintln(c.in, b.line)
			got := nextLine(t, c)
			var resp struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(got, &resp); err != nil || resp.Error == nil || resp.JSONRPC != "2.0" {
				t.Fatalf("%s, %s was answered %s, want a JSON-RPC error", when, b.line, got)
			}
			if resp.Error.Code != b.code || string(resp.ID) != b.id || !strings.HasPrefix(resp.Error.Message, b.reason) {
				t.Errorf("%s, %s was answered %s, want code %d, id %s, a message starting %q", when, b.line, got, b.code, b.id, b.reason)
			}
		}
	}
	send("before initialize")
	res := c.call(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wire","version":"1"}}`)
	if !strings.Contains(string(res), `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize after bad lines = %s", res)
	}
	c.notify(t, "notifications/initialized")
	send("after initialize")
	res = c.call(t, "tools/list", `{}`)
	if !strings.Contains(string(res), `"tools":[`) {
		t.Fatalf("tools/list after bad lines = %.300s", res)
	}
}

// nextLine reads the next line the server writes, within 60 seconds.
func nextLine(t *testing.T, c *stdioWire) []byte {
	t.Helper()
	got := make(chan []byte, 1)
	go func() {
		b, _ := c.out.ReadBytes('\n')
		got <- b
	}()
	select {
	case b := <-got:
		if len(b) == 0 {
			t.Fatal("the server closed stdout")
		}
		return b
	case <-time.After(60 * time.Second):
		t.Fatal("no answer within 60s")
	}
	return nil
}
