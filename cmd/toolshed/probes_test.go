package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// getFrom sends GET url with Host host ("" leaves it) from the loopback address local
// (127.0.0.x: a client of its own, as Linux routes all of 127.0.0.0/8 to loopback),
// on a connection of its own, and returns the status and body.
func getFrom(t *testing.T, local, url, host string) (int, string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}, Timeout: time.Minute}
	resp, err := c.Do(testupstream.Request(t, http.MethodGet, url, map[string]string{"Host": host}, nil))
	if err != nil {
		t.Fatalf("GET %s from %s: %v", url, local, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestProbesUnderFlood runs serve --http under the flood: one client opens three
// times --max-connections and sends half a request's headers on each. Its connections
// past its share are answered 503 at once; the health probes answer, on --probe-addr
// even from the flooding client's own address, and on the main port from another
// address; and another client's MCP session starts. Before, the flood took every
// connection and the probes waited in the listen queue.
func TestProbesUnderFlood(t *testing.T) {
	bin := toolshedBinary(t)
	addr, probeAddr := freeAddr(t), freeAddr(t)
	const maxConns = 8
	startCommand(t, bin, []string{"TOOLSHED_TOKEN="}, []string{"serve", "--catalog", "testdata/small.json", "--http", addr, "--probe-addr", probeAddr,
		"--max-connections", "8", "--db", "off"}, testupstream.ServersReady)

	answers := make(chan string, 3*maxConns)
	for range 3 * maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
		go func() {
			b, _ := io.ReadAll(c)
			answers <- string(b)
		}()
	}
	wait := time.After(2 * time.Minute)
	for range 3*maxConns - maxConns/2 {
		select {
		case a := <-answers:
			if !strings.HasPrefix(a, "HTTP/1.1 503 ") || !strings.Contains(a, "--max-connections-per-client") {
				t.Fatalf("a flood connection past the client's share got %q, want 503 naming --max-connections-per-client", a)
			}
		case <-wait:
			t.Fatal("the flood's connections past its share were not refused within 2 minutes")
		}
	}

	for _, tc := range []struct{ from, url string }{
		{"127.0.0.1", "http://" + probeAddr + "/healthz"},
		{"127.0.0.1", "http://" + probeAddr + "/readyz"},
		{"127.0.0.2", "http://" + addr + "/healthz"},
	} {
		if status, body := getFrom(t, tc.from, tc.url, ""); status != 200 || !strings.Contains(body, `"ok"`) {
			t.Errorf("GET %s from %s during the flood: %d %q, want 200 ok", tc.url, tc.from, status, body)
		}
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}
	other := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: time.Minute}
	resp, err := other.Do(testupstream.Request(t, http.MethodPost, "http://"+addr+"/mcp", map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"other","version":"1"}}}`)))
	if err != nil {
		t.Fatalf("another client's initialize during the flood: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("another client's initialize during the flood: %d %q, want 200 and a session", resp.StatusCode, b)
	}
}

// TestSideListenersCheckHost: --metrics-addr and --probe-addr apply the main listener's
// Host rule, so a web page that rebinds its name to 127.0.0.1 cannot read the server
// names and counts in /metrics; a name allowed with --allow-host passes. The probe
// listener serves the probes and nothing else. /metrics had no Host check.
func TestSideListenersCheckHost(t *testing.T) {
	bin := toolshedBinary(t)
	addr, metricsAddr, probeAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	startCommand(t, bin, []string{"TOOLSHED_TOKEN="}, []string{"serve", "--catalog", "testdata/small.json", "--http", addr,
		"--metrics-addr", metricsAddr, "--probe-addr", probeAddr, "--allow-host", "toolshed.internal", "--db", "off"},
		testupstream.ServersReady)
	for _, tc := range []struct {
		url, host string
		status    int
		says      string
	}{
		{"http://" + metricsAddr + "/metrics", "", 200, "toolshed_build_info"},
		{"http://" + metricsAddr + "/metrics", "localhost:9090", 200, "toolshed_build_info"},
		{"http://" + metricsAddr + "/metrics", "toolshed.internal", 200, "toolshed_build_info"},
		{"http://" + metricsAddr + "/metrics", "rebound.example:9090", 403, `invalid Host header "rebound.example:9090"`},
		{"http://" + probeAddr + "/healthz", "", 200, `{"status":"ok"}`},
		{"http://" + probeAddr + "/healthz", "rebound.example", 403, "invalid Host header"},
		{"http://" + probeAddr + "/mcp", "", 404, ""},
		{"http://" + probeAddr + "/status", "", 404, ""},
	} {
		status, body := getFrom(t, "127.0.0.1", tc.url, tc.host)
		if status != tc.status || !strings.Contains(body, tc.says) {
			t.Errorf("GET %s with Host %q = %d %.200q, want %d and %q", tc.url, tc.host, status, body, tc.status, tc.says)
		}
	}
}
