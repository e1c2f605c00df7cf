package frontdoor

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// dialFrom opens a connection to addr from the loopback address local (127.0.0.x), as a
// client of its own: Linux routes all of 127.0.0.0/8 to the loopback interface.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 30 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dialing %s from %s: %v", addr, local, err)
	}
	return c
}

// clientFrom is an HTTP client whose connections come from local.
func clientFrom(local string) *http.Client {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
		Timeout:   30 * time.Second, // a probe that waits in the listen queue fails, not hangs
	}
}

// get sends GET url from client and returns the status and body, or fails the test.
func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The flood: one client opens three times the connection cap and sends half a
// request's headers on each. It holds its share of the cap only; the connections past
// it are taken out of the count, answered 503, saying why, and closed, so the listen
// queue keeps moving: health probes from another address answer, another client is
// served, and the flooding client is served again once its connections end. Before,
// the client took the whole cap, and everyone else waited in the listen queue until it
// let go.
func TestFloodOfOneClientLeavesTheRest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits Limits
		share  int
	}{
		{"default share, half the cap", Limits{MaxConns: 8, HeaderTimeout: time.Hour}, 4},
		{"explicit share", Limits{MaxConns: 8, MaxConnsPerClient: 3, HeaderTimeout: time.Hour}, 3},
		{"odd cap", Limits{MaxConns: 5, HeaderTimeout: time.Hour}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			capped := tc.limits.Listener(ln)
			mux := http.NewServeMux()
			mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
			mux.HandleFunc("POST /", echoBody)
			srv := tc.limits.Server(mux)
			go srv.Serve(capped)
			t.Cleanup(func() { srv.Close() })
			addr := ln.Addr().String()

			flood := 3 * tc.limits.MaxConns
			answers := make(chan string, flood)
			var conns []net.Conn
			for range flood {
				c := dialFrom(t, "127.0.0.1", addr)
				conns = append(conns, c)
				io.WriteString(c, "POST / HTTP/1.1\r\nHost: localhost\r\nX-Half: ")
				go func() {
					b, _ := io.ReadAll(c) // until the server closes it, or the test does
					answers <- string(b)
				}()
			}
			// Every connection past the share is refused, whatever the order they were
			// accepted in; the held ones are answered nothing.
			wait := time.After(2 * time.Minute)
			for range flood - tc.share {
				select {
				case a := <-answers:
					if !strings.HasPrefix(a, "HTTP/1.1 503 ") || !strings.Contains(a, "too many connections from 127.0.0.1: one client address may hold") {
						t.Fatalf("a connection past the client's share got %q, want 503 and why", a)
					}
				case <-wait:
					t.Fatalf("the connections past the share of %d were not refused: the client holds the cap of %d", tc.share, tc.limits.MaxConns)
				}
			}
			cl := capped.(*capListener)
			cl.mu.Lock()
			held := cl.per[netip.MustParsePrefix("127.0.0.1/32")]
			cl.mu.Unlock()
			if held != tc.share {
				t.Errorf("the flooding client holds %d connections, want its share, %d", held, tc.share)
			}

			// A probe from another address answers, twice (its connection ended), and
			// another client is served.
			for range 2 {
				if status, body := get(t, clientFrom("127.0.0.2"), "http://"+addr+"/healthz"); status != 200 || body != "ok" {
					t.Errorf("a probe during the flood: %d %q, want 200 ok", status, body)
				}
			}
			resp, err := clientFrom("127.0.0.3").Post("http://"+addr+"/", "application/json", strings.NewReader(`{"x":1}`))
			if err != nil {
				t.Fatalf("another client during the flood: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != `{"x":1}` {
				t.Errorf("another client during the flood got %d %q, want its body back", resp.StatusCode, b)
			}

			// The flood ends: the client is served again once the server has seen its
			// connections close.
			for _, c := range conns {
				c.Close()
			}
			for deadline := time.Now().Add(2 * time.Minute); ; {
				status, _ := get(t, clientFrom("127.0.0.1"), "http://"+addr+"/healthz")
				if status == 200 {
					break
				}
				if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
					t.Fatalf("the client after its flood ended: %d, want 200", status)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// The share counts a client's connections whatever their state: one with a long answer
// under way (an SSE stream) holds its slot as one with half its headers does, and gives
// it back when it ends. Go's HTTP client, refused, gets the 503 and its message: an
// answer written before it has sent its request was an "unsolicited response" to it,
// and the request failed with a transport error.
func TestShareCountsOpenStreams(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	l := Limits{MaxConns: 4, MaxConnsPerClient: 1}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := l.Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		if r.URL.Path == "/stream" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	go srv.Serve(l.Listener(ln))
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	stream := dialFrom(t, "127.0.0.1", addr)
	defer stream.Close()
	io.WriteString(stream, "GET /stream HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(stream), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the stream: %v", err)
	}
	if status, body := get(t, clientFrom("127.0.0.1"), "http://"+addr+"/"); status != http.StatusServiceUnavailable || !strings.Contains(body, "hold 1 of the server's 4 connections") {
		t.Errorf("a second connection of a client whose share is 1: %d %q, want 503 and why", status, body)
	}
	if status, _ := get(t, clientFrom("127.0.0.2"), "http://"+addr+"/"); status != 200 {
		t.Errorf("another client: %d, want 200", status)
	}
	stream.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		if status, _ := get(t, clientFrom("127.0.0.1"), "http://"+addr+"/"); status == 200 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the client was not served again after its stream ended")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestClientOf(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string // "" : no IP, one client
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 5}, "192.0.2.7/32"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 5}, "192.0.2.7/32"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 5}, "2001:db8::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::ffff:1"), Port: 6}, "2001:db8::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:0:1::1"), Port: 6}, "2001:db8:0:1::/64"},
		{&net.UnixAddr{Name: "/run/toolshed.sock", Net: "unix"}, ""},
	} {
		got := clientOf(tc.addr)
		if (tc.want == "" && got.IsValid()) || (tc.want != "" && got != netip.MustParsePrefix(tc.want)) {
			t.Errorf("clientOf(%v) = %v, want %q", tc.addr, got, tc.want)
		}
	}
}
