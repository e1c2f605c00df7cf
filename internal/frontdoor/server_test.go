package frontdoor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve serves h with limits l on a loopback port until the test ends, and returns its
// address.
func serve(t *testing.T, l Limits, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := l.Server(h)
	go srv.Serve(l.Listener(ln))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// echoBody answers with the request's body, or with the error reading it.
func echoBody(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "could not read the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Write(b)
}

// closedWithin reads c until it is closed, and reports what it read and whether it
// was closed before wait.
func closedWithin(c net.Conn, wait time.Duration) (string, bool) {
	c.SetReadDeadline(time.Now().Add(wait))
	b, err := io.ReadAll(c)
	return string(b), err == nil
}

// A client that sends half its body and stops gets an error and its connection closed
// once BodyTimeout has passed.
func TestBodyTimeout(t *testing.T) {
	a := serve(t, Limits{BodyTimeout: 200 * time.Millisecond}, http.HandlerFunc(echoBody))
	c, err := net.Dial("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"half\":")
	got, closed := closedWithin(c, 30*time.Second)
	if !closed {
		t.Fatalf("the connection of a half-sent body is still open after 30 s (body timeout 200 ms); read %q", got)
	}
	if !strings.Contains(got, "400 Bad Request") || !strings.Contains(got, "did not arrive within 200ms") {
		t.Errorf("a half-sent body got %q, want a 400 that says the body did not arrive in time", got)
	}

	// A whole body is read and answered, and the connection serves the next request.
	c2, err := net.Dial("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	br := bufio.NewReader(c2)
	for i := range 2 {
		body := fmt.Sprintf(`{"n":%d}`, i)
		fmt.Fprintf(c2, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != body {
			t.Errorf("request %d = %d %q, want 200 %q", i, resp.StatusCode, b, body)
		}
		if i == 0 {
			time.Sleep(400 * time.Millisecond) // past the first body's deadline
		}
	}
}

// A client that sends only part of its headers is cut off after HeaderTimeout.
func TestHeaderTimeout(t *testing.T) {
	a := serve(t, Limits{HeaderTimeout: 200 * time.Millisecond}, http.HandlerFunc(echoBody))
	c, err := net.Dial("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: localh")
	if got, closed := closedWithin(c, 30*time.Second); !closed {
		t.Fatalf("the connection of half-sent headers is still open after 30 s (header timeout 200 ms); read %q", got)
	}
}

// The body's deadline ends with the body: a response that takes longer than
// BodyTimeout (a long tool call, a model's answer) and an SSE stream that lasts longer
// are served whole, with their requests' contexts alive. (An http.Server.ReadTimeout
// would cancel both.)
func TestBodyTimeoutSparesLongResponses(t *testing.T) {
	const timeout = 300 * time.Millisecond
	mux := http.NewServeMux()
	mux.HandleFunc("POST /call", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		select {
		case <-time.After(4 * timeout): // the tool works
			fmt.Fprintf(w, "result of %s", b)
		case <-r.Context().Done():
			// The client is still there: only a deadline left on the connection
			// cancels the context.
			http.Error(w, "cancelled: "+context.Cause(r.Context()).Error(), 500)
		}
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 4 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			http.NewResponseController(w).Flush()
			select {
			case <-time.After(timeout):
			case <-r.Context().Done():
				return
			}
		}
	})
	a := serve(t, Limits{BodyTimeout: timeout}, mux)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	resp, err := client.Post("http://"+a+"/call", "application/json", strings.NewReader(`{"tool":"slow"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != `result of {"tool":"slow"}` {
		t.Errorf("a call longer than the body timeout = %d %q", resp.StatusCode, b)
	}

	resp, err = client.Get("http://" + a + "/events")
	if err != nil {
		t.Fatal(err)
	}
	b, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\n" {
		t.Errorf("an SSE stream longer than the body timeout: %q, %v; want its 4 events", b, err)
	}
}

// Past MaxConns, a connection waits until another ends.
func TestMaxConns(t *testing.T) {
	a := serve(t, Limits{MaxConns: 2, MaxConnsPerClient: 2}, http.HandlerFunc(echoBody))
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// Both are served: each answers a request.
	for i, c := range held {
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
		if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
			t.Fatalf("held connection %d: %v", i, err)
		}
	}
	third, err := net.Dial("tcp", a) // the kernel accepts it; the server does not yet
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	fmt.Fprintf(third, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	br := bufio.NewReader(third)
	third.SetReadDeadline(time.Now().Add(time.Second))
	if resp, err := http.ReadResponse(br, nil); err == nil {
		t.Fatalf("a third connection was served while two were held with MaxConns 2: %d", resp.StatusCode)
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(30 * time.Second))
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the third connection once one ended: %v", err)
	}
}

func TestLimitsDefaults(t *testing.T) {
	srv := Limits{}.Server(http.NotFoundHandler())
	if srv.ReadHeaderTimeout != DefaultHeaderTimeout || srv.IdleTimeout != DefaultIdleTimeout || srv.ReadTimeout != 0 || srv.WriteTimeout != 0 {
		t.Errorf("default server timeouts: header %v idle %v read %v write %v", srv.ReadHeaderTimeout, srv.IdleTimeout, srv.ReadTimeout, srv.WriteTimeout)
	}
	off := Limits{HeaderTimeout: -1, IdleTimeout: -1, MaxConns: -1}
	if srv := off.Server(http.NotFoundHandler()); srv.ReadHeaderTimeout != 0 || srv.IdleTimeout != 0 {
		t.Errorf("negative limits are not off: %+v", srv)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	if off.Listener(ln) != ln || (Limits{}).Listener(ln) == ln {
		t.Errorf("Listener: MaxConns -1 must leave the listener, 0 must cap it")
	}
}
