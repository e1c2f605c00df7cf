package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The toolshed under load is the real binary in a process of its own, serving Streamable
// HTTP on a free loopback port, with the three reference MCP servers from npm as its
// upstreams (the same packages, from the same .deps install, as internal/testupstream
// uses in the tests).

// findRoot returns the repository root: the nearest directory at or above the working
// directory whose go.mod is toolshed's.
func findRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(data, []byte("module github.com/toolshed/toolshed\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run it inside the toolshed repository: no toolshed go.mod at or above %s", wd)
		}
		dir = parent
	}
}

// buildToolshed builds cmd/toolshed of the checkout at root into dir, as the release is
// built (with its PGO profile, go build's default for a main package).
func buildToolshed(root, dir string) (string, error) {
	bin := filepath.Join(dir, "toolshed")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/toolshed")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building toolshed: %v", err)
	}
	return bin, nil
}

// findNode returns the node that runs the npm servers: the machine's when it is Node 20
// or newer, else the pinned Node 22 in .deps (as internal/testupstream chooses).
func findNode(modules string) string {
	if p, err := exec.LookPath("node"); err == nil {
		if out, err := exec.Command(p, "--version").Output(); err == nil {
			major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".")
			if n, err := strconv.Atoi(major); err == nil && n >= 20 {
				return p
			}
		}
	}
	return filepath.Join(modules, "node", "bin", "node")
}

// writeConfig writes an mcpServers config of the three npm servers into dir: the
// filesystem server may read dir/files, and the memory server keeps its graph in
// dir/memory.jsonl.
func writeConfig(dir, node, modules string) (string, error) {
	script := func(pkg string) (string, error) {
		p := filepath.Join(modules, "@modelcontextprotocol", pkg, "dist", "index.js")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("@modelcontextprotocol/%s is not installed at %s: run `bash scripts/deps.sh` from the repository root, or pass -modules", pkg, p)
		}
		return p, nil
	}
	everything, err := script("server-everything")
	if err != nil {
		return "", err
	}
	memory, err := script("server-memory")
	if err != nil {
		return "", err
	}
	filesystem, err := script("server-filesystem")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		return "", err
	}
	type server struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env,omitempty"`
	}
	cfg := map[string]map[string]server{"mcpServers": {
		"everything": {Command: node, Args: []string{everything, "stdio"}},
		"memory":     {Command: node, Args: []string{memory}, Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}},
		"filesystem": {Command: node, Args: []string{filesystem, filepath.Join(dir, "files")}},
	}}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "servers.json")
	return path, os.WriteFile(path, data, 0o644)
}

// gatewayProc is a running `toolshed serve --http`.
type gatewayProc struct {
	cmd      *exec.Cmd
	endpoint string // http://127.0.0.1:PORT/mcp
	stderr   *syncBuffer
	done     chan struct{}
}

var servingLine = regexp.MustCompile(`serving MCP over Streamable HTTP at (http://\S+/mcp)`)

// startGateway starts bin serving config (none when "") over HTTP on a free loopback
// port, in a process group of its own (so that its npm servers end with it), and returns
// once it listens.
func startGateway(bin, config, token string, extra []string) (*gatewayProc, error) {
	return startGatewayIn(filepath.Dir(config), bin, config, token, extra)
}

// startGatewayIn is startGateway with the search log in dataDir.
func startGatewayIn(dataDir, bin, config, token string, extra []string) (*gatewayProc, error) {
	args := []string{"serve", "--http", "127.0.0.1:0", "--tool-search", "on"}
	if config != "" {
		args = append(args, "--config", config)
	}
	if token != "" {
		args = append(args, "--token", token)
	}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The search log goes beside the config, in the run's directory, not in the user's.
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dataDir, "data"))
	return launch(cmd, servingLine, "toolshed")
}

// launch starts cmd, a toolshed, copies its stderr into the returned gatewayProc's, and
// returns once a line of it matches listening, whose first group is the endpoint; what
// names the command in errors.
func launch(cmd *exec.Cmd, listening *regexp.Regexp, what string) (*gatewayProc, error) {
	p := &gatewayProc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %v", cmd.Path, err)
	}
	go func() {
		cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.WriteString(line + "\n")
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr) // a line past the buffer: keep toolshed's stderr flowing
	}()
	select {
	case p.endpoint = <-found:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before listening:\n%s", what, p.stderr.String())
	case <-time.After(2 * time.Minute):
		p.stop()
		return nil, fmt.Errorf("%s did not listen within 2 minutes:\n%s", what, p.stderr.String())
	}
}

// stop ends the gateway with SIGINT, as a user would, and kills its process group if
// it has not exited within 15 seconds.
func (p *gatewayProc) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		fmt.Fprintln(os.Stderr, "load: toolshed did not exit within 15s of SIGINT; killing its process group")
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // whatever it left behind
	<-p.done
}

// procStatus returns the fields of /proc/PID/status in bytes (VmRSS, VmHWM, ...) and
// counts (Threads).
func procStatus(pid int) (map[string]int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		out[k] = n
	}
	return out, nil
}

// rss returns the resident set of pid now and its peak (VmRSS, VmHWM), in bytes.
func rss(pid int) (now, peak int64) {
	st, err := procStatus(pid)
	if err != nil {
		return -1, -1
	}
	return st["VmRSS"], st["VmHWM"]
}

// procStat returns the fields of /proc/PID/stat after the command name (the first is
// the state, field 3 of proc(5)).
func procStat(pid string) []string {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	// The command name is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return nil
	}
	return f
}

// statCPU is the CPU time (user + system, all threads) of a process's stat fields.
func statCPU(f []string) time.Duration {
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}

// cpuTime returns the CPU time pid has used.
func cpuTime(pid int) time.Duration {
	f := procStat(strconv.Itoa(pid))
	if f == nil {
		return 0
	}
	return statCPU(f)
}

// childrenCPU returns the CPU time used by pid's descendants that are still running:
// the upstream servers the gateway started.
func childrenCPU(pid int) time.Duration {
	ents, _ := os.ReadDir("/proc")
	stats := map[string][]string{}
	for _, e := range ents {
		if f := procStat(e.Name()); f != nil {
			stats[e.Name()] = f
		}
	}
	var total time.Duration
	parents := map[string]bool{strconv.Itoa(pid): true}
	for grew := true; grew; {
		grew = false
		for p, f := range stats {
			if parents[f[1]] && !parents[p] {
				parents[p] = true
				total += statCPU(f)
				grew = true
			}
		}
	}
	return total
}

// sockets counts the open sockets of pid (its accepted connections and listeners, and
// its connections to HTTP upstreams: none here).
func sockets(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// mb formats bytes as MiB.
func mb(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// syncBuffer is a strings.Builder safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.WriteString(s)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" {
		return b.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// newHTTPClient returns an HTTP client for up to conns concurrent connections to the
// gateway (net/http keeps only two idle connections per host by default, which would
// make most requests of a busy run open a new one).
func newHTTPClient(token string, conns int) *http.Client {
	return newHTTPClientFrom(token, conns, "")
}

// newHTTPClientFrom is newHTTPClient with connections from the loopback address local
// ("": the system's choice).
func newHTTPClientFrom(token string, conns int, local string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = conns
	tr.MaxIdleConnsPerHost = conns
	if local != "" {
		tr.DialContext = dialerFrom(local).DialContext
	}
	return &http.Client{Transport: bearer{token: token, base: tr}}
}

// connect opens a go-sdk client session to the gateway over Streamable HTTP.
func connect(ctx context.Context, endpoint string, hc *http.Client, name string) (*mcp.ClientSession, error) {
	t := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}
	return mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx, t, nil)
}

// callTool calls a tool and returns its text content, or an error for a failed request
// or an error result.
func callTool(ctx context.Context, cs *mcp.ClientSession, name string, args any) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		return text, &toolError{text}
	}
	return text, nil
}

// toolError is a tool result with isError set.
type toolError struct{ text string }

func (e *toolError) Error() string { return "error result: " + e.text }

// waitReady waits until each upstream's tool can be described through the bridge:
// the gateway answers before its upstreams are up.
func waitReady(ctx context.Context, cs *mcp.ClientSession, tools ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, tool := range tools {
		for {
			_, err := callTool(ctx, cs, "tool_describe", map[string]any{"name": tool})
			if err == nil {
				break
			}
			var te *toolError
			if !errors.As(err, &te) || ctx.Err() != nil {
				return fmt.Errorf("waiting for %s: %v", tool, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}
