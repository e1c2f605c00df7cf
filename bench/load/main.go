// Command load puts the real `toolshed serve --http` under load and under hostile
// traffic, and reports what it did and what it cost.
//
// It builds toolshed from this checkout (or takes -toolshed), starts it as a process of
// its own with the three reference MCP servers from npm as its upstreams
// (server-everything, server-memory and server-filesystem, from the .deps install that
// scripts/deps.sh makes), and drives it over Streamable HTTP on 127.0.0.1:
//
//   - -mode load (the default): -sessions concurrent go-sdk client sessions for
//     -duration, each looping tool_search, tool_describe and tool_call through the bridge,
//     with every answer checked against what was asked (see sessions.go);
//   - -mode init-flood: -flood initialize requests that never end their session (no
//     DELETE), as a broken or hostile client sends them (see hostile.go);
//   - -mode slow-body: -slow connections that send a request's headers and part of its
//     body, then stall (see hostile.go);
//   - -mode tools: a catalog of -tools real tool definitions (10,000 by default) given
//     with --catalog: launch to the first complete tools/list, RSS, and tool_search
//     against an echo call over HTTP (see tools.go).
//   - -mode probe-flood: -flood-conns connections from one client (or from each of
//     -flood-clients) that send half a request's headers and are opened again every
//     -reconnect, for -duration, while /healthz and /readyz are probed every
//     -probe-every with a -probe-timeout timeout, on --http and on --probe-addr, from
//     another address (see probeflood.go).
//   - -mode proxy: `toolshed proxy` in front of a local model API that sends answers far
//     over the proxy's bound, then a client that churns its tool-list cache (see
//     proxy.go).
//
// Run it from the repository root:
//
//	go run ./bench/load                           # 200 sessions for 60 s
//	go run ./bench/load -sessions 50 -duration 20s -markdown
//	go run ./bench/load -mode init-flood -flood 30000
//	go run ./bench/load -mode slow-body -slow 500 -hold 60s
//	go run ./bench/load -mode tools -tools 10000
//	go run ./bench/load -mode probe-flood -flood-conns 1100 -duration 60s
//	go run ./bench/load -mode proxy -answer-mib 200 -lists 12
//
// CI builds and vets it, and never runs it: it takes minutes and a quiet machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type options struct {
	mode     string
	toolshed string
	modules  string
	node     string
	token    string
	extra    []string
	timeout  time.Duration
	markdown bool

	sessions int
	duration time.Duration

	replicas  int
	nginx     bool
	stateless bool
	killAfter time.Duration

	flood     int
	floodConc int
	settle    time.Duration

	slow     int
	slowPart string
	hold     time.Duration

	tools        int
	requests     int
	starts       int
	floodConns   int
	floodClients int
	reconnect    time.Duration
	probeEvery   time.Duration
	probeTimeout time.Duration
	probeAddr    bool
	answerMiB    int
	huge         int
	answerKinds  string
	hugeConc     int
	lists        int
	listTools    int
	toolBytes    int
}

type listFlag []string

func (l *listFlag) String() string     { return fmt.Sprint(*l) }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var o options
	flag.StringVar(&o.mode, "mode", "load", "what to run: load, init-flood, slow-body, tools, probe-flood or proxy")
	flag.StringVar(&o.toolshed, "toolshed", "", "the toolshed `binary` to measure (default: build ./cmd/toolshed of this checkout)")
	flag.StringVar(&o.modules, "modules", "", "the node_modules `dir` holding the npm MCP servers (default: .deps/npm/node_modules of this checkout)")
	flag.StringVar(&o.node, "node", "", "the node `binary` for the npm servers (default: node on PATH when Node 20 or newer, else the pinned one in -modules)")
	flag.StringVar(&o.token, "token", "", "serve with --token `TOKEN`, and send it with every request")
	var extra listFlag
	flag.Var(&extra, "serve-flag", "an extra `flag` for toolshed serve (toolshed proxy in -mode proxy), such as --max-sessions=100 (repeatable)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Second, "a request not answered within this long counts as lost")
	flag.BoolVar(&o.markdown, "markdown", false, "also print the results as a Markdown table")
	flag.IntVar(&o.sessions, "sessions", 200, "load: concurrent client sessions")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "load: how long the sessions run; probe-flood: how long the flood lasts")
	flag.IntVar(&o.replicas, "replicas", 1, "load: run `N` toolshed replicas (toolshed-1 ... toolshed-N) behind nginx (needs -nginx)")
	flag.BoolVar(&o.nginx, "nginx", false, "load: put Debian's nginx with the shipped config (deploy/nginx) in front of the replicas")
	flag.BoolVar(&o.stateless, "stateless", false, "load: serve with --stateless (and nginx's round-robin config) instead of session affinity")
	flag.DurationVar(&o.killAfter, "kill-after", 0, "load: SIGKILL toolshed-2 (and its npm servers) this long into the run (0: never)")
	flag.IntVar(&o.flood, "flood", 30000, "init-flood: initialize requests to send")
	flag.IntVar(&o.floodConc, "flood-conc", 32, "init-flood: requests in flight at once")
	flag.DurationVar(&o.settle, "settle", 10*time.Second, "init-flood: how long to wait after the flood before measuring again; tools: after the first list, before measuring RSS")
	flag.IntVar(&o.slow, "slow", 500, "slow-body: stalled connections to open")
	flag.StringVar(&o.slowPart, "slow-part", "body", "slow-body: what the stalled requests send part of: body (all headers, part of the body) or headers (part of the headers)")
	flag.DurationVar(&o.hold, "hold", 60*time.Second, "slow-body: how long to keep each stalled connection open, at most")
	flag.IntVar(&o.tools, "tools", 10000, "tools: tool definitions in the catalog given with --catalog")
	flag.IntVar(&o.requests, "requests", 2000, "tools: searches and echo calls to time (each)")
	flag.IntVar(&o.starts, "starts", 3, "tools: launches of the catalog alone to time the first tools/list of")
	flag.IntVar(&o.floodConns, "flood-conns", 1100, "probe-flood: connections the flooding client holds at once")
	flag.IntVar(&o.floodClients, "flood-clients", 1, "probe-flood: flooding clients, each from an address of its own (127.0.0.1, then 127.0.1.N)")
	flag.DurationVar(&o.reconnect, "reconnect", 8*time.Second, "probe-flood: how often the flooding client opens each connection again (under the 10 s header timeout)")
	flag.DurationVar(&o.probeEvery, "probe-every", 250*time.Millisecond, "probe-flood: how often each of /healthz and /readyz is probed")
	flag.DurationVar(&o.probeTimeout, "probe-timeout", time.Second, "probe-flood: a probe not answered 200 within this long fails (Kubernetes' default: 1s)")
	flag.BoolVar(&o.probeAddr, "probe-addr", true, "probe-flood: serve --probe-addr and probe it too (false for a toolshed without the flag)")
	flag.IntVar(&o.answerMiB, "answer-mib", 200, "proxy: the size of each huge answer, in MiB")
	flag.IntVar(&o.huge, "huge", 3, "proxy: huge answers of each kind")
	flag.StringVar(&o.answerKinds, "answer-kinds", "body,sse,line", "proxy: the kinds of huge answers, separated by commas: body (a JSON body), sse (a stream of small deltas), line (a stream of one line)")
	flag.IntVar(&o.hugeConc, "huge-conc", 1, "proxy: huge answers in flight at once")
	flag.IntVar(&o.lists, "lists", 12, "proxy: distinct tools lists to churn the cache with, each sent twice")
	flag.IntVar(&o.listTools, "list-tools", 10000, "proxy: deferred tools in each list")
	flag.IntVar(&o.toolBytes, "tool-bytes", 2800, "proxy: bytes of each tool's definition, about")
	flag.Parse()
	o.extra = extra
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	switch o.mode {
	case "load", "init-flood", "slow-body", "tools", "probe-flood", "proxy":
	default:
		return fmt.Errorf("-mode must be load, init-flood, slow-body, tools, probe-flood or proxy, got %q", o.mode)
	}
	if o.floodConns < 1 || o.floodClients < 1 || o.floodClients > 254 || o.reconnect <= 0 || o.probeEvery <= 0 || o.probeTimeout <= 0 {
		return fmt.Errorf("-flood-conns must be 1 or more, -flood-clients from 1 to 254, and -reconnect, -probe-every and -probe-timeout positive")
	}
	if o.slowPart != "body" && o.slowPart != "headers" {
		return fmt.Errorf("-slow-part must be body or headers, got %q", o.slowPart)
	}
	root, err := findRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "toolshed-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.toolshed == "" {
		fmt.Fprintln(os.Stderr, "load: building toolshed from", root)
		if o.toolshed, err = buildToolshed(root, dir); err != nil {
			return err
		}
	}
	if o.mode == "proxy" { // no MCP servers: the proxy's upstream is a model API
		return runProxyMode(o)
	}
	if o.modules == "" {
		o.modules = filepath.Join(root, ".deps", "npm", "node_modules")
	}
	if o.node == "" {
		o.node = findNode(o.modules)
	}
	if o.mode == "tools" {
		if o.tools < 1 || o.requests < 1 {
			return fmt.Errorf("-tools and -requests must be 1 or more, got %d and %d", o.tools, o.requests)
		}
		return runTools(o, root, dir)
	}
	config, err := writeConfig(dir, o.node, o.modules)
	if err != nil {
		return err
	}
	if o.replicas < 1 {
		return fmt.Errorf("-replicas must be 1 or more, got %d", o.replicas)
	}
	if o.mode != "load" && (o.replicas > 1 || o.nginx || o.stateless || o.killAfter > 0) {
		return fmt.Errorf("-replicas, -nginx, -stateless and -kill-after are for -mode load")
	}
	if o.nginx || o.replicas > 1 {
		return runFleet(o, root, dir, config)
	}
	extra := o.extra
	if o.stateless {
		extra = append(extra, "--stateless")
	}
	probeAddr := ""
	if o.mode == "probe-flood" && o.probeAddr {
		if probeAddr, err = freeLoopbackAddr(); err != nil {
			return err
		}
		extra = append(extra, "--probe-addr="+probeAddr)
	}
	p, err := startGateway(o.toolshed, config, o.token, extra)
	if err != nil {
		return err
	}
	defer p.stop()
	fmt.Fprintf(os.Stderr, "load: toolshed (pid %d) serves %s; waiting for its upstreams\n", p.cmd.Process.Pid, p.endpoint)

	ctx := context.Background()
	hc := newHTTPClient(o.token, 8)
	setup, err := connect(ctx, p.endpoint, hc, "load-setup")
	if err != nil {
		return fmt.Errorf("connecting: %v\ntoolshed's stderr:\n%s", err, p.stderr.String())
	}
	defer setup.Close()
	if err := waitReady(ctx, setup, "everything__echo", "memory__open_nodes", "filesystem__read_text_file"); err != nil {
		return fmt.Errorf("%v\ntoolshed's stderr:\n%s", err, p.stderr.String())
	}
	switch o.mode {
	case "init-flood":
		return initFlood(ctx, o, p)
	case "slow-body":
		return slowBody(ctx, o, p)
	case "probe-flood":
		return probeFlood(ctx, o, p, probeAddr)
	}
	return runLoad(ctx, o, p, p.endpoint, setup, filepath.Join(filepath.Dir(config), "files"), nil)
}

// freeLoopbackAddr returns an address of 127.0.0.1 no one listens on.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// runFleet runs the load through nginx in front of -replicas replicas.
func runFleet(o options, root, dir, config string) error {
	f, err := startFleet(o, root, dir, config)
	if err != nil {
		return err
	}
	ctx := context.Background()
	// The memory servers of every replica share one graph file: the entities are
	// created once, on toolshed-1, and every replica's memory server reads them.
	hc := newHTTPClient(o.token, 8)
	var setup *mcp.ClientSession
	for i, p := range f.procs {
		s, err := connect(ctx, p.endpoint, hc, "load-setup")
		if err != nil {
			f.stopAll()
			return fmt.Errorf("connecting to toolshed-%d: %v\n%s", i+1, err, p.stderr.String())
		}
		if err := waitReady(ctx, s, "everything__echo", "memory__open_nodes", "filesystem__read_text_file"); err != nil {
			f.stopAll()
			return fmt.Errorf("toolshed-%d: %v\n%s", i+1, err, p.stderr.String())
		}
		if i == 0 {
			setup = s
			defer s.Close()
		} else {
			s.Close()
		}
	}
	return runLoad(ctx, o, f.procs[0], f.endpoint, setup, filepath.Join(filepath.Dir(config), "files"), f)
}
