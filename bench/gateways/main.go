// Command gateways measures the latency an MCP gateway adds to a tool call: toolshed
// and its peers (mcp-hub, supergateway, mcp-proxy), each a separate process between
// one client and one upstream server, over real pipes and loopback sockets. See
// README.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "upstream" {
		serveUpstream(os.Stdin, os.Stdout)
		return
	}
	if len(os.Args) > 3 && os.Args[1] == "relay" {
		check(serveRelay(os.Args[2], os.Args[3], os.Args[4:]))
		return
	}
	calls := flag.Int("n", 2000, "measured calls per run (each made once directly and once through the gateway)")
	warmup := flag.Int("warmup", 300, "calls per path before measuring")
	rounds := flag.Int("rounds", 3, "runs of every gateway and mode, interleaved")
	only := flag.String("gateways", "toolshed,mcp-hub,supergateway,mcp-proxy", "gateways to measure, comma-separated (also relay: the floor, see relay.go)")
	modes := flag.String("modes", "stdio,http,modern", "modes to measure, comma-separated (also stateless, toolshed's serve --http --stateless; rawhttp, the relay's hand-written HTTP loop)")
	toolshed := flag.String("toolshed", "", "toolshed binary (default: built from this checkout)")
	before := flag.String("toolshed-before", "", "another toolshed binary, measured as toolshed-before (an A/B comparison)")
	node := flag.String("node", "", "Node 22 or newer for the peer gateways (default: the repository's .deps, else node on PATH)")
	flag.Parse()

	root, err := repoRoot()
	check(err)
	self, err := os.Executable()
	check(err)
	work, err := os.MkdirTemp("", "toolshed-bench-gateways-")
	check(err)
	defer os.RemoveAll(work)
	if *toolshed == "" {
		*toolshed = filepath.Join(work, "toolshed")
		build := exec.Command("go", "build", "-o", *toolshed, "./cmd/toolshed")
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		check(build.Run())
	}
	if *node == "" {
		*node = findNode(root)
	}
	env := benchEnv{root: root, work: work, upstream: []string{self, "upstream"}, node: *node}

	var targets []target
	for _, name := range strings.Split(*only, ",") {
		switch name = strings.TrimSpace(name); name {
		case "toolshed":
			targets = append(targets, toolshedTargets("toolshed", *toolshed)...)
			if *before != "" {
				targets = append(targets, toolshedTargets("toolshed-before", *before)...)
			}
		case "relay":
			targets = append(targets, relayTargets()...)
		case "mcp-hub", "supergateway", "mcp-proxy":
			targets = append(targets, peerTarget(name))
		default:
			check(fmt.Errorf("unknown gateway %q", name))
		}
	}

	targets = slices.DeleteFunc(targets, func(t target) bool { return !slices.Contains(strings.Split(*modes, ","), t.mode) })
	results := map[string][]runResult{}
	for r := range *rounds {
		// Rotate the order each round, so no gateway always runs first.
		for i := range targets {
			tg := targets[(i+r)%len(targets)]
			res, err := measure(env, tg, *warmup, *calls)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s %s: %v\n", tg.gateway, tg.mode, err)
				continue
			}
			fmt.Fprintf(os.Stderr, "round %d %-16s %-9s %s added p50 %6.0f µs p99 %7.0f µs, CPU %5.0f µs a call\n", r+1, tg.gateway, tg.mode, res.protocol, res.via.p50-res.direct.p50, res.via.p99-res.direct.p99, res.cpu)
			results[tg.key()] = append(results[tg.key()], res)
		}
	}
	report(os.Stdout, targets, results, *calls, *rounds)
}

// target is one gateway in one mode: how to start it and reach it.
type target struct {
	gateway, mode string
	// start starts the gateway and returns a client on it, how to stop it and the
	// process id whose CPU time is the gateway's.
	start func(env benchEnv) (client, func(), int, error)
}

func (t target) key() string { return t.gateway + "/" + t.mode }

type benchEnv struct {
	root, work string
	upstream   []string // command line of the raw upstream
	node       string
}

// toolshedTargets are toolshed serve over stdio and over Streamable HTTP.
func toolshedTargets(name, bin string) []target {
	config := func(env benchEnv) string {
		cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"up": map[string]any{"command": env.upstream[0], "args": env.upstream[1:]}}})
		path := filepath.Join(env.work, name+".json")
		check(os.WriteFile(path, cfg, 0o600))
		return path
	}
	return []target{
		{name, "stdio", func(env benchEnv) (client, func(), int, error) {
			c, err := startStdio(env.work, bin, "serve", "--config", config(env), "--tool-search", "off")
			if err != nil {
				return nil, nil, 0, err
			}
			return c, c.close, c.cmd.Process.Pid, nil
		}},
		{name, "http", func(env benchEnv) (client, func(), int, error) {
			port := freePort()
			stop, pid, err := startProcess(env.work, bin, "serve", "--config", config(env), "--tool-search", "off", "--http", port)
			return &streamableClient{url: "http://127.0.0.1:" + port + "/mcp"}, stop, pid, err
		}},
		{name, "stateless", func(env benchEnv) (client, func(), int, error) {
			port := freePort()
			stop, pid, err := startProcess(env.work, bin, "serve", "--config", config(env), "--tool-search", "off", "--http", port, "--stateless")
			return &streamableClient{url: "http://127.0.0.1:" + port + "/mcp"}, stop, pid, err
		}},
		// The same serve --http as http, with a client that negotiates as the go-sdk's
		// does by default: MCP 2026-07-28 once toolshed offers it, and until then the
		// 2025-11-25 session it falls back to (the table says which).
		{name, "modern", func(env benchEnv) (client, func(), int, error) {
			port := freePort()
			stop, pid, err := startProcess(env.work, bin, "serve", "--config", config(env), "--tool-search", "off", "--http", port)
			return &streamableClient{url: "http://127.0.0.1:" + port + "/mcp", modern: true}, stop, pid, err
		}},
	}
}

// relayTargets are the benchmark's own relay (relay.go) over stdio, net/http and a
// hand-written HTTP loop: the floor of what any Go gateway adds, in the same rounds.
func relayTargets() []target {
	targets := []target{{"relay", "stdio", func(env benchEnv) (client, func(), int, error) {
		c, err := startStdio(env.work, env.upstream[0], append([]string{"relay", "stdio", "-"}, env.upstream...)...)
		if err != nil {
			return nil, nil, 0, err
		}
		return c, c.close, c.cmd.Process.Pid, nil
	}}}
	for _, mode := range []string{"http", "rawhttp"} {
		targets = append(targets, target{"relay", mode, func(env benchEnv) (client, func(), int, error) {
			port := freePort()
			stop, pid, err := startProcess(env.work, env.upstream[0], append([]string{"relay", mode, "127.0.0.1:" + port}, env.upstream...)...)
			return &streamableClient{url: "http://127.0.0.1:" + port + "/mcp"}, stop, pid, err
		}})
	}
	return targets
}

// peerTarget is a peer gateway over HTTP, the only way each of them serves a client
// (none proxies stdio to stdio): Streamable HTTP for supergateway and mcp-proxy, the
// SSE transport for mcp-hub, which serves nothing else.
func peerTarget(name string) target {
	return target{name, "http", func(env benchEnv) (client, func(), int, error) {
		port := freePort()
		modules := filepath.Join(env.root, "bench", "gateways", "node_modules")
		if _, err := os.Stat(modules); err != nil {
			return nil, nil, 0, fmt.Errorf("the peer gateways are not installed: run bench/gateways/install.sh")
		}
		var args []string
		var c client
		switch name {
		case "supergateway":
			args = []string{filepath.Join(modules, "supergateway/dist/index.js"), "--stdio", shellQuote(env.upstream),
				"--outputTransport", "streamableHttp", "--stateful", "--port", port, "--logLevel", "none"}
			c = &streamableClient{url: "http://127.0.0.1:" + port + "/mcp"}
		case "mcp-proxy":
			args = append([]string{filepath.Join(modules, "mcp-proxy/dist/bin/mcp-proxy.mjs"), "--port", port, "--host", "127.0.0.1", "--server", "stream", "--"}, env.upstream...)
			c = &streamableClient{url: "http://127.0.0.1:" + port + "/mcp"}
		case "mcp-hub":
			cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"up": map[string]any{"command": env.upstream[0], "args": env.upstream[1:]}}})
			path := filepath.Join(env.work, "mcp-hub.json")
			check(os.WriteFile(path, cfg, 0o600))
			args = []string{filepath.Join(modules, "mcp-hub/dist/cli.js"), "--port", port, "--config", path}
			c = &sseClient{base: "http://127.0.0.1:" + port, path: "/mcp"}
		}
		stop, pid, err := startProcess(env.work, env.node, args...)
		return c, stop, pid, err
	}}
}

// runResult is one run: latencies of the direct calls and of the calls through the
// gateway, made alternately, and the gateway process's CPU time per call.
type runResult struct {
	direct, via stats
	cpu         float64 // µs
	protocol    string  // the protocol version the client spoke to the gateway
}

type stats struct{ p50, p99 float64 } // µs

func summarize(d []time.Duration) stats {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	us := func(x time.Duration) float64 { return float64(x.Nanoseconds()) / 1000 }
	return stats{us(d[len(d)/2]), us(d[len(d)*99/100])}
}

// measure starts the upstream directly and the gateway (with its own upstream), then
// calls echo on each in turn.
func measure(env benchEnv, tg target, warmup, calls int) (runResult, error) {
	direct, err := startStdio(env.work, env.upstream[0], env.upstream[1:]...)
	if err != nil {
		return runResult{}, err
	}
	defer direct.close()
	via, stop, pid, err := tg.start(env)
	if err != nil {
		return runResult{}, err
	}
	defer stop()
	if err := handshake(direct); err != nil {
		return runResult{}, fmt.Errorf("direct: %w", err)
	}
	viaTool, err := waitForEcho(via)
	if err != nil {
		return runResult{}, err
	}
	callEcho := func(c client, tool string, i int) (time.Duration, error) {
		text := fmt.Sprintf("call %d", i)
		params := fmt.Sprintf(`{"name":%q,"arguments":{"text":%q}}`, tool, text)
		start := time.Now()
		res, err := c.call("tools/call", params)
		d := time.Since(start)
		if err == nil && !bytes.Contains(res, []byte(`"text":"`+text+`"`)) {
			err = fmt.Errorf("echo answered %s", res)
		}
		return d, err
	}
	var dLat, vLat []time.Duration
	var cpuStart time.Duration
	for i := range warmup + calls {
		if i == warmup {
			cpuStart = cpuTime(pid)
		}
		d, err := callEcho(direct, "echo", i)
		if err != nil {
			return runResult{}, fmt.Errorf("direct: %w", err)
		}
		v, err := callEcho(via, viaTool, i)
		if err != nil {
			return runResult{}, fmt.Errorf("through the gateway: %w", err)
		}
		if i >= warmup {
			dLat, vLat = append(dLat, d), append(vLat, v)
		}
	}
	return runResult{summarize(dLat), summarize(vLat), float64((cpuTime(pid) - cpuStart).Microseconds()) / float64(calls), protocolOf(via)}, nil
}

// cpuTime is the CPU time (user and system, every thread) a process has used so far,
// from /proc (in clock ticks of 10 ms, so long runs are more precise); 0 elsewhere.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	var utime, stime int64
	fmt.Sscan(fields[11], &utime)
	fmt.Sscan(fields[12], &stime)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// waitForEcho initializes a session and waits until the gateway lists the upstream's
// echo tool, whatever it calls it.
func waitForEcho(c client) (string, error) {
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		if err := handshake(c); err != nil {
			last = err
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for time.Now().Before(deadline) {
			res, err := c.call("tools/list", `{}`)
			if err != nil {
				return "", err
			}
			var list struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			json.Unmarshal(res, &list)
			for _, t := range list.Tools {
				if t.Name == "echo" || strings.HasSuffix(t.Name, "__echo") {
					return t.Name, nil
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return "", fmt.Errorf("the gateway did not list echo within 60s (last error: %v)", last)
}

// handshake starts a session at 2025-11-25, or for a modern client negotiates.
func handshake(c client) error {
	if sc, ok := c.(*streamableClient); ok && sc.modern {
		return sc.negotiate()
	}
	if _, err := c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`); err != nil {
		return err
	}
	return c.notify("notifications/initialized")
}

// protocolOf is the protocol version c speaks.
func protocolOf(c client) string {
	if sc, ok := c.(*streamableClient); ok && sc.protocol != "" {
		return sc.protocol
	}
	if _, ok := c.(*sseClient); ok {
		return "2024-11-05"
	}
	return "2025-11-25"
}

// report prints the table of added latency: for each gateway and mode, the median over
// rounds of p50 and p99 through the gateway minus p50 and p99 directly.
func report(w io.Writer, targets []target, results map[string][]runResult, calls, rounds int) {
	fmt.Fprintf(w, "\nadded latency per tool call, µs (median over %d rounds of %d calls; upstream over stdio; direct = the client on the upstream's stdio)\n\n", rounds, calls)
	fmt.Fprintln(w, "| gateway | mode | protocol | added p50 | added p99 | through p50 | direct p50 | gateway CPU per call |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|")
	median := func(x []float64) float64 {
		sort.Float64s(x)
		return x[len(x)/2]
	}
	for _, tg := range targets {
		rs := results[tg.key()]
		if len(rs) == 0 {
			fmt.Fprintf(w, "| %s | %s | | failed | | | | |\n", tg.gateway, tg.mode)
			continue
		}
		var a50, a99, v50, d50, cpu []float64
		var protocols []string
		for _, r := range rs {
			if !slices.Contains(protocols, r.protocol) {
				protocols = append(protocols, r.protocol)
			}
			cpu = append(cpu, r.cpu)
			a50 = append(a50, r.via.p50-r.direct.p50)
			a99 = append(a99, r.via.p99-r.direct.p99)
			v50 = append(v50, r.via.p50)
			d50 = append(d50, r.direct.p50)
		}
		mode := tg.mode
		if tg.gateway == "mcp-hub" {
			mode = "http (SSE)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f |\n", tg.gateway, mode, strings.Join(protocols, ", "), median(a50), median(a99), median(v50), median(d50), median(cpu))
	}
}

// startProcess starts a server process in its own process group; the returned stop
// ends the group.
func startProcess(dir, name string, args ...string) (func(), int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, io.Discard, io.Discard
	cmd.Env = isolatedEnv(dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, 0, err
	}
	stop := func() {
		// SIGTERM first, so that each gateway shuts down as it would for a user.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		t := time.AfterFunc(3*time.Second, cancel)
		cmd.Wait()
		t.Stop()
		cancel()
	}
	return stop, cmd.Process.Pid, nil
}

// isolatedEnv is the environment of a process under test: its home and XDG
// directories are the run's work directory, so that nothing it keeps (toolshed's search
// log, the peers' state) lands in the user's own.
func isolatedEnv(dir string) []string {
	return append(os.Environ(), "HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
}

func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// repoRoot finds the toolshed checkout this runs in.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/toolshed/toolshed\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run this inside the toolshed repository")
		}
		dir = parent
	}
}

func findNode(root string) string {
	if p := filepath.Join(root, ".deps", "npm", "node_modules", "node", "bin", "node"); fileExists(p) {
		return p
	}
	return "node"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateways:", err)
		os.Exit(1)
	}
}
