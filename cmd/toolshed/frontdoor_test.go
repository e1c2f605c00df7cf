package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// rawPost sends a POST to url with headers ("Host" sets the request's host) and
// returns the status and body.
func rawPost(t *testing.T, url string, headers map[string]string, body string) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(testupstream.Request(t, http.MethodPost, url, headers, strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestProxyFrontDoor runs the proxy binary: the request from a web page is
// refused before anything reaches the model, a half-sent body does not hold its
// connection past --body-timeout, and a real client is served.
func TestProxyFrontDoor(t *testing.T) {
	bin := toolshedBinary(t)
	model := fakellm.NewAnthropic(fakellm.Say("hello"))
	up := httptest.NewServer(model)
	defer up.Close()
	addr, stderr := startProxy(t, bin, []string{"ANTHROPIC_API_KEY=operator-key", "TOOLSHED_TOKEN="},
		"--upstream-url", up.URL, "--body-timeout", "500ms")
	defer func() {
		if t.Failed() {
			t.Logf("proxy stderr:\n%s", stderr)
		}
	}()

	// curl -X POST 127.0.0.1:8787/v1/messages -H 'Content-Type: text/plain'
	//   -H 'Origin: http://evil.example' -H 'Host: evil.example'
	status, body := rawPost(t, "http://"+addr+"/v1/messages",
		map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example", "Host": "evil.example"},
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"spend the key"}]}`)
	if status != http.StatusForbidden || !strings.Contains(body, "permission_error") {
		t.Errorf("the issue's request = %d %s, want 403 permission_error", status, body)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("the model got %d requests from a web page", n)
	}

	halfSentBody(t, addr, "/v1/messages", "")

	// The Anthropic SDK (application/json, Host 127.0.0.1:port) is served.
	client := anthropic.NewClient(option.WithBaseURL("http://"+addr), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil || len(msg.Content) != 1 || msg.Content[0].Text != "hello" {
		t.Fatalf("the Anthropic SDK through the proxy: %v %+v", err, msg)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
}

// halfSentBody sends half a body to path and checks that, once the body timeout
// (500 ms) has passed, it gets a 400 that says so and its connection is closed: a
// connection kept open for the next request would hold one of --max-connections until
// the idle timeout.
func halfSentBody(t *testing.T, addr, path, headers string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%sContent-Length: 1000\r\n\r\n{\"model\":", path, headers)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("a half-sent body to %s still holds its connection after 30 s with --body-timeout 500ms (%v); read %q", path, err, got)
	}
	if !bytes.Contains(got, []byte("400 Bad Request")) || !bytes.Contains(got, []byte("did not arrive within 500ms")) {
		t.Errorf("a half-sent body to %s got %q, want a 400 saying it did not arrive in time", path, got)
	}
}

// TestServeFrontDoor runs serve --http: a Host allowed with --allow-host reaches /mcp,
// another does not, and /status needs the token (in any case of its scheme).
func TestServeFrontDoor(t *testing.T) {
	bin := toolshedBinary(t)
	addr := freeAddr(t)
	startCommand(t, bin, []string{"TOOLSHED_TOKEN="}, []string{"serve", "--http", addr, "--token", "T", "--allow-host", "toolshed.internal", "--body-timeout", "500ms"},
		func(s string) bool { return strings.Contains(s, "serving MCP over Streamable HTTP") })
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	for _, tc := range []struct {
		host, auth string
		status     int
	}{
		{"toolshed.internal", "Bearer T", http.StatusOK},
		{"toolshed.internal:80", "bearer T", http.StatusOK},
		{"evil.example", "Bearer T", http.StatusForbidden},
		{"toolshed.internal", "Bearer nope", http.StatusUnauthorized},
	} {
		status, body := rawPost(t, "http://"+addr+"/mcp", map[string]string{"Host": tc.host, "Authorization": tc.auth,
			"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, initialize)
		if status != tc.status {
			t.Errorf("POST /mcp with Host %s and %q = %d %q, want %d", tc.host, tc.auth, status, body, tc.status)
		}
	}
	halfSentBody(t, addr, "/mcp", "Authorization: Bearer T\r\nAccept: application/json, text/event-stream\r\n")
	// The built-in catalog's servers start at once; /readyz says when.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("GET /readyz = %d; want 503 then 200 within 2 minutes", resp.StatusCode)
		}
	}
	for _, tc := range []struct {
		path, auth string
		status     int
	}{{"/healthz", "", 200}, {"/status", "", 401}, {"/status", "bearer T", 200}} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s with %q = %d %q, want %d", tc.path, tc.auth, resp.StatusCode, b, tc.status)
		}
	}
}

// TestFrontDoorFlags: bad values of the front-door flags are usage errors of either
// command, and a proxy reachable from other machines without a token says so.
func TestFrontDoorFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"proxy", "--allow-origin", "app.example"}, `--allow-origin not an origin: "app.example"`},
		{[]string{"serve", "--http", "0", "--allow-origin", "app.example"}, "scheme://host[:port]"},
		{[]string{"proxy", "--max-connections", "0"}, "--max-connections must be at least 1, got 0"},
		{[]string{"serve", "--http", "0", "--body-timeout", "0s"}, "--body-timeout must be a positive duration"},
		{[]string{"serve", "--http", "0", "--max-connections-per-client", "-1"}, "--max-connections-per-client must be from 1 to --max-connections (1024), or 0 for half of it; got -1"},
		{[]string{"proxy", "--max-connections", "10", "--max-connections-per-client", "11"}, "--max-connections-per-client must be from 1 to --max-connections (10)"},
		{[]string{"serve", "--probe-addr", "0"}, "--probe-addr serves the health probes of Streamable HTTP: add --http ADDR"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.says) {
			t.Errorf("toolshed %s = %d %q, want 2 and %q", strings.Join(tc.args, " "), code, stderr.String(), tc.says)
		}
	}

	bin := toolshedBinary(t)
	for _, tc := range []struct {
		token string
		warns bool
	}{{"", true}, {"T", false}} {
		log := startCommand(t, bin, []string{"TOOLSHED_TOKEN=" + tc.token}, []string{"proxy", "--listen", "0.0.0.0:0"},
			func(s string) bool { return strings.Contains(s, "Messages API with tool search at") })
		if warned := strings.Contains(log.String(), "warning: listening on 0.0.0.0:0 without authentication; set --token (or $TOOLSHED_TOKEN)"); warned != tc.warns {
			t.Errorf("proxy on 0.0.0.0 with token %q: warned %v, want %v:\n%s", tc.token, warned, tc.warns, log)
		}
	}
}
