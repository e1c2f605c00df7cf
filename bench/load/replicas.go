package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolshed/toolshed/internal/nginx"
)

// -replicas N -nginx: N toolshed replicas (toolshed-1 ... toolshed-N, each with its own
// npm servers and search log) behind Debian's nginx with the config toolshed ships
// (deploy/nginx/toolshed.conf, or toolshed-stateless.conf with -stateless), the sessions
// connecting to nginx. -kill-after D kills toolshed-2 (SIGKILL to its process group,
// as a node that dies) D into the run. The report adds the requests each replica
// answered (from nginx's access log), the failed requests (each must be one that was
// on the killed replica: in flight when it died, or, with affinity, the next request of
// a session it owned, which gets 404 and connects again), and each replica's /metrics,
// scraped every second, against what the clients saw.

// fleet is the replicas and their nginx.
type fleet struct {
	procs     []*gatewayProc
	addrs     []string // host:port of each replica
	nginx     *nginx.Proc
	endpoint  string // nginx's /mcp
	stateless bool
	killAfter time.Duration
	scraper   *http.Client // with the token, which /metrics on the main listener needs

	mu         sync.Mutex
	killed     int // index of the killed replica, -1 before
	killedAt   time.Time
	failures   []failure
	reconnects int
	base, last []map[string]float64 // each replica's metrics when the load started, and last scraped
	stop       chan struct{}
	scraped    chan struct{}
}

// failure is a request that got no answer (a tool error is an answer).
type failure struct {
	at            time.Time
	session, kind string
	msg           string
	afterKill     bool
}

// killedReplica is the replica -kill-after kills: toolshed-2.
const killedReplica = 1

func startFleet(o options, root, dir, config string) (*fleet, error) {
	if !o.nginx {
		return nil, fmt.Errorf("-replicas %d: add -nginx (the sessions reach the replicas through nginx)", o.replicas)
	}
	if o.replicas < 2 && o.killAfter > 0 {
		return nil, fmt.Errorf("-kill-after needs -replicas 2 or more: the sessions must have somewhere to go")
	}
	f := &fleet{scraper: newHTTPClient(o.token, 4), stateless: o.stateless, killAfter: o.killAfter, killed: -1, stop: make(chan struct{}), scraped: make(chan struct{})}
	for i := range o.replicas {
		id := fmt.Sprintf("toolshed-%d", i+1)
		extra := append([]string{"--replica-id", id, "--db", filepath.Join(dir, "data", id+".db")}, o.extra...)
		if o.stateless {
			extra = append(extra, "--stateless")
		}
		p, err := startGateway(o.toolshed, config, o.token, extra)
		if err != nil {
			f.stopAll()
			return nil, err
		}
		f.procs = append(f.procs, p)
		f.addrs = append(f.addrs, strings.TrimSuffix(strings.TrimPrefix(p.endpoint, "http://"), "/mcp"))
		fmt.Fprintf(os.Stderr, "load: %s (pid %d) serves %s\n", id, p.cmd.Process.Pid, p.endpoint)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.stopAll()
		return nil, err
	}
	listen := l.Addr().String()
	l.Close()
	conf := nginx.Affinity
	if o.stateless {
		conf = nginx.Stateless
	}
	if f.nginx, err = nginx.Start(filepath.Join(root, "deploy", "nginx"), conf, f.addrs, listen); err != nil {
		f.stopAll()
		return nil, err
	}
	f.endpoint = "http://" + listen + "/mcp"
	fmt.Fprintf(os.Stderr, "load: nginx (deploy/nginx/%s) serves %s\n", conf, f.endpoint)
	return f, nil
}

func (f *fleet) stopAll() {
	if f.nginx != nil {
		f.nginx.Stop()
	}
	for _, p := range f.procs {
		p.stop()
	}
}

// start scrapes every replica's metrics now and every second, and arms the kill.
func (f *fleet) start(o options) {
	f.base = make([]map[string]float64, len(f.procs))
	f.last = make([]map[string]float64, len(f.procs))
	for i := range f.procs {
		f.base[i] = f.scrape(i)
		f.last[i] = f.base[i]
	}
	go func() {
		defer close(f.scraped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
			}
			for i := range f.procs {
				if m := f.scrape(i); m != nil {
					f.mu.Lock()
					f.last[i] = m
					f.mu.Unlock()
				}
			}
		}
	}()
	if o.killAfter > 0 {
		time.AfterFunc(o.killAfter, func() {
			p := f.procs[killedReplica]
			f.mu.Lock()
			f.killed, f.killedAt = killedReplica, time.Now()
			f.mu.Unlock()
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			fmt.Fprintf(os.Stderr, "load: killed toolshed-%d (SIGKILL to pid %d's process group) %s into the run\n", killedReplica+1, p.cmd.Process.Pid, o.killAfter)
		})
	}
}

// failed notes a request of session that got no answer.
func (f *fleet) failed(session, kind string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, failure{at: time.Now(), session: session, kind: kind, msg: errorClass(err), afterKill: f.killed >= 0})
}

// reconnected counts a session that connected again.
func (f *fleet) reconnected() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reconnects++
}

// owner returns the index of the replica a session id names, or -1.
func (f *fleet) owner(session string) int {
	id, _, ok := strings.Cut(session, ".")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimPrefix(id, "toolshed-"))
	if err != nil || n < 1 || n > len(f.procs) {
		return -1
	}
	return n - 1
}

// scrape returns replica i's /metrics samples, summed by metric name and outcome
// ("name" and "name{outcome}"), or nil when it serves none (yet).
func (f *fleet) scrape(i int) map[string]float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+f.addrs[i]+"/metrics", nil)
	resp, err := f.scraper.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	return parseMetrics(resp.Body)
}

// parseMetrics sums the samples of Prometheus's text format by name, and by name and
// outcome label.
func parseMetrics(r io.Reader) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		series := line[:i]
		name, labels, _ := strings.Cut(series, "{")
		out[name] += v
		if _, rest, ok := strings.Cut(labels, `outcome="`); ok {
			outcome, _, _ := strings.Cut(rest, `"`)
			out[name+"{"+outcome+"}"] += v
		}
	}
	return out
}

// report prints what the fleet adds to r, and returns an error if a request failed that
// was not on the killed replica, or any was lost or answered wrongly.
func (f *fleet) report(w io.Writer, r report) error {
	close(f.stop)
	<-f.scraped
	for i := range f.procs {
		if i != f.killed {
			if m := f.scrape(i); m != nil {
				f.last[i] = m
			}
		}
	}
	defer f.stopAll()
	mode := "affinity (deploy/nginx/toolshed.conf)"
	if f.stateless {
		mode = "stateless (deploy/nginx/toolshed-stateless.conf)"
	}
	fmt.Fprintf(w, "\n%d replicas behind nginx, %s\n", len(f.procs), mode)

	entries, err := f.nginx.Entries()
	if err != nil {
		return err
	}
	type count struct{ requests, s404, s405, s502, other int }
	per := make([]count, len(f.procs))
	index := map[string]int{}
	for i, a := range f.addrs {
		index[a] = i
	}
	misrouted := 0
	for _, e := range entries {
		i, ok := index[e.Upstreams[len(e.Upstreams)-1]]
		if !ok {
			continue
		}
		per[i].requests++
		switch e.Status {
		case "200", "202", "204":
		case "404":
			per[i].s404++
		case "405":
			per[i].s405++ // the go-sdk client's GET for a standalone stream, stateless
		case "502":
			per[i].s502++
		default:
			per[i].other++
		}
		if !f.stateless && e.Session != "" && f.owner(e.Session) != i && !(f.owner(e.Session) == f.killed && e.Status == "404") {
			misrouted++
		}
	}
	fmt.Fprintf(w, "%-12s %10s %6s %6s %6s %6s\n", "replica", "requests", "404", "405", "502", "other")
	for i, c := range per {
		note := ""
		if i == f.killed {
			note = fmt.Sprintf("  (killed %s into the run)", f.killAfter)
		}
		fmt.Fprintf(w, "toolshed-%-3d %10d %6d %6d %6d %6d%s\n", i+1, c.requests, c.s404, c.s405, c.s502, c.other, note)
	}
	if !f.stateless {
		fmt.Fprintf(w, "requests with a session id answered by a replica other than its owner (other than the killed owner's 404s): %d\n", misrouted)
	}

	// Every failed request must be one the killed replica had: in flight when it died,
	// or (affinity) the next request of one of its sessions.
	onKilled, elsewhere := map[string]int{}, map[string]int{}
	for _, fl := range f.failures {
		switch {
		case fl.afterKill && (f.stateless || fl.session == "" || f.owner(fl.session) == f.killed):
			onKilled[fl.kind+": "+fl.msg]++
		default:
			elsewhere[fl.kind+" of session "+fl.session+": "+fl.msg]++
		}
	}
	fmt.Fprintf(w, "failed requests on the killed replica: %d; elsewhere: %d; sessions that connected again: %d\n", total(onKilled), total(elsewhere), f.reconnects)
	for _, k := range sortedKeys(onKilled) {
		fmt.Fprintf(w, "  killed replica  %d × %s\n", onKilled[k], k)
	}
	for _, k := range sortedKeys(elsewhere) {
		fmt.Fprintf(w, "  ELSEWHERE       %d × %s\n", elsewhere[k], k)
	}

	// What each replica's /metrics counted, against what the clients saw.
	served := 0
	for i := range f.procs {
		if f.last[i] != nil {
			served++
		}
	}
	if served == 0 {
		fmt.Fprintln(w, "metrics: no replica serves /metrics (not in this build): not compared")
	} else {
		names := []string{"toolshed_searches_total{ok}", "toolshed_describes_total{ok}", "toolshed_calls_total{ok}"}
		fmt.Fprintf(w, "metrics (counted during the run; the killed replica's as last scraped, up to 1 s before it died):\n")
		sum := map[string]float64{}
		for i := range f.procs {
			if f.last[i] == nil || f.base[i] == nil {
				fmt.Fprintf(w, "  toolshed-%d: no /metrics\n", i+1)
				continue
			}
			var parts []string
			for _, n := range names {
				d := f.last[i][n] - f.base[i][n]
				sum[n] += d
				parts = append(parts, fmt.Sprintf("%s %.0f", n, d))
			}
			fmt.Fprintf(w, "  toolshed-%d: %s\n", i+1, strings.Join(parts, ", "))
		}
		rows := map[string]row{}
		for _, rw := range r.rows() {
			rows[rw.kind] = rw
		}
		calls := 0
		for _, tg := range targets {
			calls += rows["call "+tg.tool].answered - rows["call "+tg.tool].errs
		}
		fmt.Fprintf(w, "  all replicas: searches %.0f (clients saw %d answered), describes %.0f (%d), calls ok %.0f (%d)\n",
			sum[names[0]], rows["tool_search"].answered-rows["tool_search"].errs, sum[names[1]], rows["tool_describe"].answered-rows["tool_describe"].errs, sum[names[2]], calls)
	}

	bad := 0
	for _, rw := range r.rows() {
		bad += rw.lost + rw.mm
	}
	switch {
	case bad > 0:
		return fmt.Errorf("%d requests were lost or answered wrongly", bad)
	case total(elsewhere) > 0:
		return fmt.Errorf("%d requests failed that were not on the killed replica", total(elsewhere))
	case misrouted > 0:
		return fmt.Errorf("%d requests reached a replica that does not own their session", misrouted)
	case f.killed < 0 && r.failures() > 0:
		return fmt.Errorf("%d requests failed", r.failures())
	}
	return nil
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
