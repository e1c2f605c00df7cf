package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session's loop: tool_search, then tool_describe of the tool it found, then a
// tool_call of that tool, the three tools taken in turn. Every answer is checked:
//
//   - search: the tool it looked for is among the matches;
//   - describe: the definition is of the tool asked for, with an input schema;
//   - everything's echo: the text is "Echo: " and the message sent, unique to the
//     request (session, sequence number and a nonce of the run), so that an answer
//     delivered to the wrong request or the wrong session is seen;
//   - filesystem's read_text_file: the contents of the session's own file, unique to
//     the session;
//   - memory's open_nodes: the session's own entity, with its unique observation.
//
// A request with no answer within -timeout is lost; an answer that is not the one
// asked for is mismatched. Both are counted, never assumed zero.

// target is a tool the sessions call, with how they find and check it.
type target struct {
	tool  string
	query string
}

var targets = []target{
	{"everything__echo", "echo a message back"},
	{"filesystem__read_text_file", "read the contents of a text file"},
	{"memory__open_nodes", "open nodes in the knowledge graph by name"},
}

// kinds are the request kinds reported, in order.
var kinds = []string{"connect", "reconnect", "tool_search", "tool_describe", "call " + targets[0].tool, "call " + targets[1].tool, "call " + targets[2].tool, "close"}

// kindStats is what one kind of request did.
type kindStats struct {
	lat        []time.Duration // of the requests answered (in time), correct or not
	errs       map[string]int  // failed requests by error
	lost       int             // no answer within -timeout
	mismatched int             // an answer that was not the one asked for
	sample     string          // one mismatched answer
}

type stats map[string]*kindStats

func (s stats) kind(k string) *kindStats {
	ks := s[k]
	if ks == nil {
		ks = &kindStats{errs: map[string]int{}}
		s[k] = ks
	}
	return ks
}

// record files the outcome of one request that took d: err is the request's error, and
// bad what was wrong with its answer ("" when it was right).
func (s stats) record(kind string, d time.Duration, err error, bad string) {
	ks := s.kind(kind)
	var te *toolError
	switch {
	case errors.Is(err, errLost):
		ks.lost++
		return
	case err != nil && !errors.As(err, &te):
		ks.errs[errorClass(err)]++
		return // no answer: a failed request has no latency
	case err != nil:
		ks.errs[errorClass(err)]++
	case bad != "":
		ks.mismatched++
		if ks.sample == "" {
			ks.sample = bad
		}
	}
	ks.lat = append(ks.lat, d)
}

func (s stats) merge(o stats) {
	for k, ko := range o {
		ks := s.kind(k)
		ks.lat = append(ks.lat, ko.lat...)
		for e, n := range ko.errs {
			ks.errs[e] += n
		}
		ks.lost += ko.lost
		ks.mismatched += ko.mismatched
		if ks.sample == "" {
			ks.sample = ko.sample
		}
	}
}

// errLost marks a request that had no answer within -timeout.
var errLost = errors.New("no answer in time")

// sessionIDs matches the session ids of replicas (toolshed-2.ABC...), which would
// make every session's error a class of its own.
var sessionIDs = regexp.MustCompile(`[a-z0-9-]+\.[A-Z2-7]{26}`)

// errorClass is an error's message, cut short, for counting errors by kind.
func errorClass(err error) string {
	msg := sessionIDs.ReplaceAllString(err.Error(), "<session>")
	if len(msg) > 120 {
		msg = msg[:120] + "…"
	}
	return msg
}

// session is one client's state.
type session struct {
	n       int
	cs      *mcp.ClientSession
	file    string // path of the session's file
	content string // its contents
	entity  string // the name of the session's memory entity
	token   string // its observation
	fleet   *fleet // the replicas behind nginx, or nil for one toolshed
	broken  bool   // a request failed without an answer: connect again (fleet only)
}

// runLoad runs the sessions against endpoint: p's, or nginx's in front of fl's replicas
// (p is then the replica whose CPU and memory are reported).
func runLoad(ctx context.Context, o options, p *gatewayProc, endpoint string, setup *mcp.ClientSession, files string, fl *fleet) error {
	if o.sessions < 1 || o.duration <= 0 {
		return fmt.Errorf("-sessions and -duration must be positive")
	}
	nonce := randHex(6)
	sessions := make([]*session, o.sessions)
	var entities []map[string]any
	for i := range sessions {
		s := &session{fleet: fl, n: i + 1, entity: fmt.Sprintf("load-session-%04d", i+1), token: "token-" + randHex(8)}
		s.file = filepath.Join(files, fmt.Sprintf("session-%04d.txt", s.n))
		s.content = fmt.Sprintf("load session %d, run %s, %s\n", s.n, nonce, randHex(8))
		if err := os.WriteFile(s.file, []byte(s.content), 0o644); err != nil {
			return err
		}
		entities = append(entities, map[string]any{"name": s.entity, "entityType": "load-session", "observations": []string{s.token}})
		sessions[i] = s
	}
	for chunk := range slices.Chunk(entities, 100) {
		if _, err := callTool(ctx, setup, "tool_call", map[string]any{"name": "memory__create_entities", "arguments": map[string]any{"entities": chunk}}); err != nil {
			return fmt.Errorf("creating the sessions' memory entities: %v", err)
		}
	}

	pid := p.cmd.Process.Pid
	rssStart, _ := rss(pid)
	cpuStart, upStart, selfStart := cpuTime(pid), childrenCPU(pid), cpuTime(os.Getpid())
	var peakSampled int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			if r, _ := rss(pid); r > peakSampled {
				peakSampled = r
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	}()

	fmt.Fprintf(os.Stderr, "load: %d sessions for %s (toolshed RSS %s)\n", o.sessions, o.duration, mb(rssStart))
	// Each session has its own HTTP client, as separate agents would: a shared pool
	// would let one session's connections serve another's.
	all := stats{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(o.duration)
	if fl != nil {
		fl.start(o)
	}
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := s.run(ctx, o, endpoint, deadline)
			mu.Lock()
			all.merge(st)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpuUsed, upUsed, selfUsed := cpuTime(pid)-cpuStart, childrenCPU(pid)-upStart, cpuTime(os.Getpid())-selfStart
	close(stopSampling)
	<-sampled
	_, hwm := rss(pid)
	time.Sleep(2 * time.Second)
	rssAfter, _ := rss(pid)

	r := report{o: o, all: all, elapsed: elapsed, cpu: cpuUsed, upstreamCPU: upUsed, clientCPU: selfUsed, rssStart: rssStart, rssPeakSampled: peakSampled, rssHWM: hwm, rssAfter: rssAfter}
	if fl != nil {
		r.who = "toolshed-1 (one of the replicas)"
	}
	r.print(os.Stdout)
	if o.markdown {
		r.markdown(os.Stdout)
	}
	if fl != nil {
		return fl.report(os.Stdout, r)
	}
	if r.failures() > 0 {
		return fmt.Errorf("%d requests failed, were lost or were answered wrongly", r.failures())
	}
	return nil
}

// run connects, loops until deadline, and ends the session (DELETE).
func (s *session) run(ctx context.Context, o options, endpoint string, deadline time.Time) stats {
	st := stats{}
	hc := newHTTPClient(o.token, 4)
	defer hc.CloseIdleConnections()
	cs, err := s.connect(ctx, o, st, "connect", endpoint, hc)
	if err != nil {
		return st
	}
	s.cs = cs
	for i := 0; time.Now().Before(deadline); i++ {
		tg := targets[(s.n+i)%len(targets)]
		for _, step := range []func(){
			func() { s.search(ctx, o, st, tg) },
			func() { s.describe(ctx, o, st, tg) },
			func() { s.call(ctx, o, st, tg, i) },
		} {
			if s.broken && !s.reconnect(ctx, o, st, endpoint, hc, deadline) {
				return st
			}
			step()
		}
	}
	t0 := time.Now()
	err = s.cs.Close()
	st.record("close", time.Since(t0), err, "")
	return st
}

// request runs one tool call with the -timeout, and records it as kind with check's
// verdict on its text.
func (s *session) request(ctx context.Context, o options, st stats, kind, tool string, args any, check func(string) string) {
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	t0 := time.Now()
	text, err := callTool(rctx, s.cs, tool, args)
	d := time.Since(t0)
	if err != nil && rctx.Err() != nil && ctx.Err() == nil {
		err = errLost
	}
	var te *toolError
	if s.fleet != nil && err != nil && !errors.As(err, &te) {
		// Its replica died, or the session is gone: noted for the report, which
		// checks that only the killed replica's requests failed. With affinity the
		// session connects again; stateless, it just goes on.
		s.fleet.failed(s.cs.ID(), kind, err)
		s.broken = !s.fleet.stateless
	}
	bad := ""
	if err == nil {
		bad = check(text)
	}
	st.record(kind, d, err, bad)
}

// reconnect replaces a session whose replica died or forgot it with a new one, as an
// agent's client must (the go-sdk does not initialize again by itself), retrying until
// deadline; false when it could not.
func (s *session) reconnect(ctx context.Context, o options, st stats, endpoint string, hc *http.Client, deadline time.Time) bool {
	go s.cs.Close() // a DELETE to a replica that may be gone
	for time.Now().Before(deadline) {
		if cs, err := s.connect(ctx, o, st, "reconnect", endpoint, hc); err == nil {
			s.cs, s.broken = cs, false
			s.fleet.reconnected()
			return true
		}
		time.Sleep(time.Second)
	}
	return false
}

// connect opens the session's client session, recorded as kind.
func (s *session) connect(ctx context.Context, o options, st stats, kind, endpoint string, hc *http.Client) (*mcp.ClientSession, error) {
	t0 := time.Now()
	cctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cs, err := connect(cctx, endpoint, hc, fmt.Sprintf("load-%04d", s.n))
	if err != nil && cctx.Err() != nil {
		err = errLost
	}
	st.record(kind, time.Since(t0), err, "")
	return cs, err
}

func (s *session) search(ctx context.Context, o options, st stats, tg target) {
	s.request(ctx, o, st, "tool_search", "tool_search", map[string]any{"query": tg.query, "limit": 10}, func(text string) string {
		var res struct{ Matches []struct{ Name string } }
		if err := json.Unmarshal([]byte(text), &res); err != nil {
			return fmt.Sprintf("search %q: not a search result: %.200s", tg.query, text)
		}
		for _, m := range res.Matches {
			if m.Name == tg.tool {
				return ""
			}
		}
		return fmt.Sprintf("search %q: %s not among the matches: %.300s", tg.query, tg.tool, text)
	})
}

func (s *session) describe(ctx context.Context, o options, st stats, tg target) {
	s.request(ctx, o, st, "tool_describe", "tool_describe", map[string]any{"name": tg.tool}, func(text string) string {
		var res struct {
			Name        string
			InputSchema json.RawMessage
		}
		if err := json.Unmarshal([]byte(text), &res); err != nil || res.Name != tg.tool || len(res.InputSchema) == 0 {
			return fmt.Sprintf("describe %s: got %.200s", tg.tool, text)
		}
		return ""
	})
}

func (s *session) call(ctx context.Context, o options, st stats, tg target, i int) {
	var args map[string]any
	var want func(string) bool
	switch tg.tool {
	case "everything__echo":
		msg := fmt.Sprintf("session %d request %d %s", s.n, i, randHex(4))
		args = map[string]any{"message": msg}
		want = func(text string) bool { return text == "Echo: "+msg }
	case "filesystem__read_text_file":
		args = map[string]any{"path": s.file}
		want = func(text string) bool { return text == s.content }
	case "memory__open_nodes":
		args = map[string]any{"names": []string{s.entity}}
		want = func(text string) bool {
			var g struct {
				Entities []struct {
					Name         string
					Observations []string
				}
			}
			return json.Unmarshal([]byte(text), &g) == nil && len(g.Entities) == 1 &&
				g.Entities[0].Name == s.entity && slices.Equal(g.Entities[0].Observations, []string{s.token})
		}
	}
	s.request(ctx, o, st, "call "+tg.tool, "tool_call", map[string]any{"name": tg.tool, "arguments": args}, func(text string) string {
		if want(text) {
			return ""
		}
		return fmt.Sprintf("session %d call %s %v: got %.200q", s.n, tg.tool, args, text)
	})
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// report is a load run's outcome.
type report struct {
	o                                          options
	all                                        stats
	elapsed, cpu, upstreamCPU, clientCPU       time.Duration
	rssStart, rssPeakSampled, rssHWM, rssAfter int64
	who                                        string // whose CPU and RSS: "" for the one toolshed
}

// row is one kind's figures.
type row struct {
	kind                     string
	answered, errs, lost, mm int
	p50, p99                 time.Duration
}

func (r report) rows() []row {
	var rows []row
	order := slices.Clone(kinds)
	for k := range r.all {
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	for _, k := range order {
		ks := r.all[k]
		if ks == nil {
			continue
		}
		lat := slices.Clone(ks.lat)
		slices.Sort(lat)
		e := 0
		for _, n := range ks.errs {
			e += n
		}
		rows = append(rows, row{k, len(lat), e, ks.lost, ks.mismatched, percentile(lat, 50), percentile(lat, 99)})
	}
	return rows
}

// loopRequests counts the requests of the sessions' loops (not connect or close).
func (r report) loopRequests() int {
	n := 0
	for _, row := range r.rows() {
		if row.kind != "connect" && row.kind != "reconnect" && row.kind != "close" {
			n += row.answered + row.lost
		}
	}
	return n
}

func (r report) failures() int {
	n := 0
	for _, row := range r.rows() {
		n += row.errs + row.lost + row.mm
	}
	return n
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func (r report) print(w *os.File) {
	fmt.Fprintf(w, "%d sessions for %s (ran %.1f s), toolshed and its npm upstreams as separate processes, over Streamable HTTP on 127.0.0.1\n\n",
		r.o.sessions, r.o.duration, r.elapsed.Seconds())
	fmt.Fprintf(w, "%-36s %9s %7s %6s %10s %10s %10s\n", "kind", "answered", "errors", "lost", "mismatched", "p50", "p99")
	for _, row := range r.rows() {
		fmt.Fprintf(w, "%-36s %9d %7d %6d %10d %10s %10s\n", row.kind, row.answered, row.errs, row.lost, row.mm, ms(row.p50), ms(row.p99))
	}
	fmt.Fprintln(w)
	for _, row := range r.rows() {
		k, ks := row.kind, r.all[row.kind]
		var es []string
		for e := range ks.errs {
			es = append(es, e)
		}
		sort.Strings(es)
		for _, e := range es {
			fmt.Fprintf(w, "error  %s: %d × %s\n", k, ks.errs[e], e)
		}
		if ks.sample != "" {
			fmt.Fprintf(w, "mismatch  %s: %d, e.g. %s\n", k, ks.mismatched, ks.sample)
		}
	}
	n := r.loopRequests()
	fmt.Fprintf(w, "requests (search + describe + call): %d, %.0f/s\n", n, float64(n)/r.elapsed.Seconds())
	if r.who != "" {
		fmt.Fprintf(w, "CPU and RSS below are of %s\n", r.who)
	}
	fmt.Fprintf(w, "toolshed CPU: %.1f s over the run (%.0f%% of one core), %.0f µs per request\n",
		r.cpu.Seconds(), 100*r.cpu.Seconds()/r.elapsed.Seconds(), float64(r.cpu.Microseconds())/float64(max(n, 1)))
	fmt.Fprintf(w, "CPU of the rest: the three npm servers %.1f s, this program's %d clients %.1f s (on a machine of %d cores)\n",
		r.upstreamCPU.Seconds(), r.o.sessions, r.clientCPU.Seconds(), runtime.NumCPU())
	fmt.Fprintf(w, "toolshed RSS: %s before, %s peak sampled during the run, %s peak (VmHWM), %s 2 s after the sessions closed\n",
		mb(r.rssStart), mb(r.rssPeakSampled), mb(r.rssHWM), mb(r.rssAfter))
}

func (r report) markdown(w *os.File) {
	fmt.Fprintf(w, "\n| request | answered | errors | lost | mismatched | p50 | p99 |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.rows() {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %s | %s |\n", strings.Replace(row.kind, "call ", "tool_call ", 1), row.answered, row.errs, row.lost, row.mm, ms(row.p50), ms(row.p99))
	}
	n := r.loopRequests()
	fmt.Fprintf(w, "\n%d sessions × %s: %d requests (%.0f/s); toolshed peak RSS %s (VmHWM; %s before the sessions), CPU %.0f µs per request.\n",
		r.o.sessions, r.o.duration, n, float64(n)/r.elapsed.Seconds(), mb(r.rssHWM), mb(r.rssStart), float64(r.cpu.Microseconds())/float64(max(n, 1)))
}
