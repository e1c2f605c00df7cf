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
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The connection flood with probes (issue 28): each of o.floodClients clients holds
// o.floodConns connections, each with half a request's headers, and opens each again
// every o.reconnect (under the server's 10 s header timeout), while an orchestrator
// probes /healthz and /readyz every o.probeEvery with a timeout of o.probeTimeout, as
// Kubernetes does (its default probe timeout is 1 s), and an ordinary client starts a
// session. The flood comes from 127.0.0.1 (and 127.0.1.N for more clients); the probes
// from 127.0.0.2, as a kubelet's from its node's address, and the ordinary client from
// 127.0.0.3: Linux routes all of 127.0.0.0/8 to loopback, and the server tells the
// clients apart by address.

const (
	probesFrom = "127.0.0.2"
	clientFrom = "127.0.0.3"
)

// floodFrom is the address of flooding client i.
func floodFrom(i int) string {
	if i == 0 {
		return "127.0.0.1"
	}
	return fmt.Sprintf("127.0.1.%d", i)
}

// dialerFrom dials from the loopback address local.
func dialerFrom(local string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 10 * time.Second}
}

// floodCounts is what became of the flood's connections.
type floodCounts struct {
	opened, dialFailed, refused, held, closed, other atomic.Int64
	mu                                               sync.Mutex
	refusal                                          string // the first refusal's body
	others                                           map[string]int
}

// probeTarget is one probed URL and its results.
type probeTarget struct {
	name, url string
	mu        sync.Mutex
	lat       []time.Duration // of the probes answered 200 within the timeout
	failed    map[string]int  // the others, by what happened
}

// probeFlood runs the flood for o.duration with the probes beside it, then reports.
func probeFlood(ctx context.Context, o options, p *gatewayProc, probeAddr string) error {
	u, err := url.Parse(p.endpoint)
	if err != nil {
		return err
	}
	pid := p.cmd.Process.Pid
	baseSockets := sockets(pid)
	rssBefore, _ := rss(pid)
	auth := ""
	if o.token != "" {
		auth = "Authorization: Bearer " + o.token + "\r\n"
	}
	partial := "POST " + u.Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\n" + auth + "Content-Type: application/json\r\n"

	targets := []*probeTarget{
		{name: "GET /healthz on --http", url: "http://" + u.Host + "/healthz"},
		{name: "GET /readyz on --http", url: "http://" + u.Host + "/readyz"},
	}
	if probeAddr != "" {
		targets = append(targets,
			&probeTarget{name: "GET /healthz on --probe-addr", url: "http://" + probeAddr + "/healthz"},
			&probeTarget{name: "GET /readyz on --probe-addr", url: "http://" + probeAddr + "/readyz"})
	}
	fmt.Fprintf(os.Stderr, "load: %d connections from each of %d clients with half-sent headers, each opened again every %s, for %s; probes from %s every %s (timeout %s)\n",
		o.floodConns, o.floodClients, o.reconnect, o.duration, probesFrom, o.probeEvery, o.probeTimeout)

	start := time.Now()
	end := start.Add(o.duration)
	var fc floodCounts
	fc.others = map[string]int{}
	var wg sync.WaitGroup
	for i := range o.floodConns * o.floodClients {
		from := floodFrom(i % o.floodClients)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cycle := time.Now(); cycle.Before(end); cycle = cycle.Add(o.reconnect) {
				next := cycle.Add(o.reconnect)
				if next.After(end) {
					next = end
				}
				floodOnce(from, u.Host, partial, next, &fc)
				time.Sleep(time.Until(next))
			}
		}()
	}
	probeClient := &http.Client{
		Transport: &http.Transport{DialContext: dialerFrom(probesFrom).DialContext, DisableKeepAlives: true}, // a kubelet's probe: a connection each
		Timeout:   o.probeTimeout,
	}
	for _, tg := range targets {
		tg.failed = map[string]int{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next := time.Now(); next.Before(end); next = next.Add(o.probeEvery) {
				time.Sleep(time.Until(next))
				tg.probe(probeClient)
			}
		}()
	}
	// What toolshed holds, second by second.
	maxSockets := 0
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for t := time.Now(); t.Before(end); t = t.Add(time.Second) {
			maxSockets = max(maxSockets, sockets(pid)-baseSockets)
			time.Sleep(time.Until(t.Add(time.Second)))
		}
	}()
	time.Sleep(min(o.duration/2, 5*time.Second))
	during := fmt.Sprintf("%s into the flood, from %s", time.Since(start).Round(time.Second), clientFrom)
	probeFrom(ctx, o, p.endpoint, during, clientFrom)
	wg.Wait()
	<-sampled
	rssAfter, hwm := rss(pid)

	clients := floodFrom(0)
	if o.floodClients > 1 {
		clients = fmt.Sprintf("%d clients (%s, %s..%s)", o.floodClients, floodFrom(0), floodFrom(1), floodFrom(o.floodClients-1))
	}
	fmt.Printf("connection flood from %s: %d connections at once from each, each sending half a request's headers and opened again every %s, for %s\n",
		clients, o.floodConns, o.reconnect, o.duration)
	fmt.Printf("  connections opened: %d (failed to connect: %d)\n", fc.opened.Load(), fc.dialFailed.Load())
	fmt.Printf("  answered 503 (the client's share is full): %d", fc.refused.Load())
	if fc.refusal != "" {
		fmt.Printf("  (%.160q)", fc.refusal)
	}
	fmt.Println()
	fmt.Printf("  held, unanswered, until the client opened them again: %d\n", fc.held.Load())
	fmt.Printf("  closed by toolshed without an answer: %d\n", fc.closed.Load())
	for e, n := range fc.others {
		fmt.Printf("  other: %d × %s\n", n, e)
	}
	fmt.Printf("  sockets toolshed held beyond its baseline: at most %d\n", maxSockets)
	fmt.Printf("health probes from %s, every %s, timeout %s:\n", probesFrom, o.probeEvery, o.probeTimeout)
	for _, tg := range targets {
		tg.report()
	}
	fmt.Printf("toolshed RSS: %s before, %s after; peak %s (VmHWM)\n", mb(rssBefore), mb(rssAfter), mb(hwm))
	probeFrom(ctx, o, p.endpoint, "after the flood, from "+clientFrom, clientFrom)
	return nil
}

// floodOnce opens one flood connection, sends partial, and reads until the server
// answers or closes it, or until, when the client opens it again.
func floodOnce(from, addr, partial string, until time.Time, fc *floodCounts) {
	conn, err := dialerFrom(from).Dial("tcp", addr)
	if err != nil {
		fc.dialFailed.Add(1)
		return
	}
	defer conn.Close()
	fc.opened.Add(1)
	if _, err := io.WriteString(conn, partial); err != nil {
		fc.note("write: " + lastPart(err))
		return
	}
	conn.SetReadDeadline(until)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	var ne net.Error
	switch {
	case err == nil:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			fc.refused.Add(1)
			fc.mu.Lock()
			if fc.refusal == "" {
				fc.refusal = strings.TrimSpace(string(b))
			}
			fc.mu.Unlock()
			return
		}
		fc.note(resp.Status)
	case errors.As(err, &ne) && ne.Timeout():
		fc.held.Add(1)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		fc.closed.Add(1)
	default:
		fc.note(lastPart(err))
	}
}

func (fc *floodCounts) note(what string) {
	fc.mu.Lock()
	fc.others[what]++
	fc.mu.Unlock()
}

// lastPart is an error's last part: "connection reset by peer", without the addresses.
func lastPart(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// probe sends one probe and records what came of it.
func (tg *probeTarget) probe(c *http.Client) {
	t0 := time.Now()
	resp, err := c.Get(tg.url)
	what := ""
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			what = resp.Status
		}
	} else {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			what = "no answer within the timeout"
		} else {
			what = lastPart(err)
		}
	}
	d := time.Since(t0)
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if what != "" {
		tg.failed[what]++
		return
	}
	tg.lat = append(tg.lat, d)
}

func (tg *probeTarget) report() {
	slices.Sort(tg.lat)
	failed := 0
	for _, n := range tg.failed {
		failed += n
	}
	fmt.Printf("  %s: %d probes, %d answered 200, %d failed", tg.name, len(tg.lat)+failed, len(tg.lat), failed)
	if len(tg.lat) > 0 {
		fmt.Printf("; latency p50 %s, p99 %s, max %s", ms(percentile(tg.lat, 50)), ms(percentile(tg.lat, 99)), ms(tg.lat[len(tg.lat)-1]))
	}
	fmt.Println()
	for what, n := range tg.failed {
		fmt.Printf("    failed: %d × %s\n", n, what)
	}
}
