package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Hostile traffic, measured from outside: what the gateway holds (RSS, sockets) and
// for how long, what it answers, and whether an ordinary client is still served.

// initializeBody is a client's first request, as a plain HTTP client sends it.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

// initFlood sends o.flood initialize requests that never end their sessions, and
// reports the gateway's RSS before and after, its answers by status, and whether the
// sessions it made are still alive after o.settle.
func initFlood(ctx context.Context, o options, p *gatewayProc) error {
	pid := p.cmd.Process.Pid
	rssBefore, _ := rss(pid)
	hc := newHTTPClient(o.token, o.floodConc)
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		samples  = map[int]string{}
		failed   = map[string]int{}
		ids      []string
	)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	fmt.Fprintf(os.Stderr, "load: %d initialize requests, %d at a time, no DELETE (toolshed RSS %s)\n", o.flood, o.floodConc, mb(rssBefore))
	for range o.floodConc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(o.flood) {
				status, id, body, err := postInit(ctx, hc, p.endpoint, o.timeout)
				mu.Lock()
				if err != nil {
					failed[errorClass(err)]++
				} else {
					statuses[status]++
					if _, ok := samples[status]; !ok && status != http.StatusOK {
						samples[status] = strings.TrimSpace(body)
					}
					if id != "" {
						ids = append(ids, id)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	rssAfter, hwm := rss(pid)
	fmt.Fprintf(os.Stderr, "load: flood sent in %.1f s; waiting %s\n", elapsed.Seconds(), o.settle)
	time.Sleep(o.settle)
	rssSettled, _ := rss(pid)

	fmt.Printf("initialize flood: %d requests, %d at a time, in %.1f s (%.0f/s), no session ended (no DELETE)\n",
		o.flood, o.floodConc, elapsed.Seconds(), float64(o.flood)/elapsed.Seconds())
	var codes []int
	for c := range statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		fmt.Printf("  HTTP %d: %d", c, statuses[c])
		if s := samples[c]; s != "" {
			fmt.Printf("  (%.200q)", s)
		}
		fmt.Println()
	}
	for e, n := range failed {
		fmt.Printf("  failed: %d × %s\n", n, e)
	}
	fmt.Printf("  sessions created (an Mcp-Session-Id returned): %d\n", len(ids))
	fmt.Printf("toolshed RSS: %s before, %s after the flood, %s %s later; peak %s (VmHWM)\n",
		mb(rssBefore), mb(rssAfter), mb(rssSettled), o.settle, mb(hwm))
	if len(ids) > 0 {
		for _, which := range []struct {
			name string
			id   string
		}{{"first", ids[0]}, {"last", ids[len(ids)-1]}} {
			status, err := pingSession(ctx, hc, p.endpoint, which.id, o.timeout)
			switch {
			case err != nil:
				fmt.Printf("the %s flood session, after the flood and %s: ping failed: %v\n", which.name, o.settle, err)
			case status == http.StatusOK:
				fmt.Printf("the %s flood session, after the flood and %s: still alive (ping: HTTP 200)\n", which.name, o.settle)
			default:
				fmt.Printf("the %s flood session, after the flood and %s: HTTP %d to a ping\n", which.name, o.settle, status)
			}
		}
	}
	probe(ctx, o, p.endpoint, "after the flood")
	return nil
}

// postInit sends one initialize request and reads the whole answer.
func postInit(ctx context.Context, hc *http.Client, endpoint string, timeout time.Duration) (status int, id, body string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(initializeBody))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", "", err
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b), nil
}

// pingSession sends a ping on a session and returns the status.
func pingSession(ctx context.Context, hc *http.Client, endpoint, id string, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// probe reports whether an ordinary client (the go-sdk's, a session of its own) can
// connect and call a tool, and how long it took.
func probe(ctx context.Context, o options, endpoint, when string) {
	probeFrom(ctx, o, endpoint, when, "")
}

// probeFrom is probe with the client's connections from the loopback address local.
func probeFrom(ctx context.Context, o options, endpoint, when, local string) {
	hc := newHTTPClientFrom(o.token, 4, local)
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	t0 := time.Now()
	cs, err := connect(ctx, endpoint, hc, "load-probe")
	if err != nil {
		fmt.Printf("an ordinary client %s: cannot connect (%.1f s): %v\n", when, time.Since(t0).Seconds(), err)
		return
	}
	defer cs.Close()
	text, err := callTool(ctx, cs, "tool_call", map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": "probe"}})
	switch {
	case err != nil:
		fmt.Printf("an ordinary client %s: connected, but its call failed (%.1f s): %v\n", when, time.Since(t0).Seconds(), err)
	case text != "Echo: probe":
		fmt.Printf("an ordinary client %s: connected, but its call returned %.200q\n", when, text)
	default:
		fmt.Printf("an ordinary client %s: connected and called a tool in %.0f ms\n", when, float64(time.Since(t0).Microseconds())/1000)
	}
}

// stalled is what became of one stalled connection.
type stalled struct {
	dialErr  error
	closedAt time.Duration // when the server closed it (0: it did not within the hold)
	status   string        // the status line the server sent, if any
	readErr  string        // how the read ended, when not by EOF
}

// slowBody opens o.slow connections that each send a POST's headers and part of its
// body (or part of its headers), then nothing, and reports how many the gateway holds
// and for how long.
func slowBody(ctx context.Context, o options, p *gatewayProc) error {
	pid := p.cmd.Process.Pid
	u, err := url.Parse(p.endpoint)
	if err != nil {
		return err
	}
	auth := ""
	if o.token != "" {
		auth = "Authorization: Bearer " + o.token + "\r\n"
	}
	head := "POST " + u.Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\n" + auth +
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(initializeBody))
	partial := head + initializeBody[:len(initializeBody)/2]
	if o.slowPart == "headers" {
		partial = head[:strings.Index(head, "Content-Type")]
	}
	baseSockets := sockets(pid)
	rssBefore, _ := rss(pid)
	fmt.Fprintf(os.Stderr, "load: %d connections that send %s and stall, held up to %s\n", o.slow, map[string]string{"body": "headers and half a body", "headers": "part of the headers"}[o.slowPart], o.hold)

	results := make([]stalled, o.slow)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = stall(u.Host, partial, start, o.hold)
		}()
	}
	// What the gateway holds, sampled while the connections stall.
	maxSockets := 0
	var atSecond []int
	sampleDone := make(chan struct{})
	go func() {
		defer close(sampleDone)
		for t := time.Now(); time.Since(start) < o.hold+time.Second; t = t.Add(time.Second) {
			n := sockets(pid) - baseSockets
			maxSockets = max(maxSockets, n)
			atSecond = append(atSecond, n)
			time.Sleep(time.Until(t.Add(time.Second)))
		}
	}()
	time.Sleep(3 * time.Second)
	probe(ctx, o, p.endpoint, fmt.Sprintf("%s into the stall", time.Since(start).Round(time.Second)))
	wg.Wait()
	<-sampleDone
	rssAfter, hwm := rss(pid)

	dialed, closed := 0, 0
	var closedAt []time.Duration
	statuses := map[string]int{}
	dialErrs := map[string]int{}
	readErrs := map[string]int{}
	for _, r := range results {
		if r.dialErr != nil {
			dialErrs[errorClass(r.dialErr)]++
			continue
		}
		dialed++
		if r.closedAt > 0 {
			closed++
			closedAt = append(closedAt, r.closedAt)
		}
		if r.status != "" {
			statuses[r.status]++
		}
		if r.readErr != "" {
			readErrs[r.readErr]++
		}
	}
	slices.Sort(closedAt)
	fmt.Printf("stalled requests (%s): %d connections opened, %d failed to connect\n", o.slowPart, dialed, o.slow-dialed)
	for e, n := range dialErrs {
		fmt.Printf("  connect failed: %d × %s\n", n, e)
	}
	fmt.Printf("  sockets toolshed held beyond its baseline: at most %d; second by second: %v\n", maxSockets, atSecond)
	if closed > 0 {
		fmt.Printf("  closed by toolshed within the %s hold: %d, after %.1f s (first) / %.1f s (median) / %.1f s (last)\n",
			o.hold, closed, closedAt[0].Seconds(), percentile(closedAt, 50).Seconds(), closedAt[len(closedAt)-1].Seconds())
	} else {
		fmt.Printf("  closed by toolshed within the %s hold: none\n", o.hold)
	}
	fmt.Printf("  still open when the hold ended: %d\n", dialed-closed)
	for s, n := range statuses {
		fmt.Printf("  answered %q: %d\n", s, n)
	}
	for e, n := range readErrs {
		fmt.Printf("  read ended: %d × %s\n", n, e)
	}
	fmt.Printf("toolshed RSS: %s before, %s after; peak %s (VmHWM)\n", mb(rssBefore), mb(rssAfter), mb(hwm))
	probe(ctx, o, p.endpoint, "after the stall")
	return nil
}

// stall dials addr, writes partial and reads until the server closes the connection or
// hold has passed since start.
func stall(addr, partial string, start time.Time, hold time.Duration) stalled {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return stalled{dialErr: err}
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, partial); err != nil {
		return stalled{closedAt: time.Since(start), readErr: "write: " + err.Error()}
	}
	conn.SetReadDeadline(start.Add(hold))
	var r stalled
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err == nil {
		r.status = strings.TrimSpace(line)
		_, err = io.Copy(io.Discard, br)
		if err == nil {
			err = io.EOF
		}
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return r // held for the whole hold
	case errors.Is(err, io.EOF):
	default:
		r.readErr = err.Error()
		if i := strings.LastIndex(r.readErr, ": "); i >= 0 {
			r.readErr = r.readErr[i+2:] // "connection reset by peer", without the addresses
		}
	}
	r.closedAt = time.Since(start)
	return r
}
