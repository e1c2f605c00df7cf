//go:build e2e && unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// What the TypeScript SDK and AI SDK tests share: a toolshed gateway in front of real
// upstreams (the npm reference servers and the recorder), run as a separate process
// either by the node client itself (stdio) or by the test (Streamable HTTP); the node
// client scripts in testdata/, which print one JSON line per observation; and a check
// that every process a test started is gone at its end. Set TOOLSHED_E2E_VERBOSE=1 to
// see what each script printed. Unix only (process groups, /proc on Linux).

// markerEnv carries a value unique to one test into every process the test starts,
// directly or not (node, toolshed, the upstreams), so that leftovers can be found.
const markerEnv = "TOOLSHED_E2E_MARKER"

// sdkCommand is a command line the node scripts can spawn.
type sdkCommand struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// sdkGateway is one test's toolshed configuration: its upstreams, where their effects
// land, and how to reach each upstream directly for reference.
type sdkGateway struct {
	t      *testing.T
	dir    string
	config string
	mode   string // --tool-search: "on" or "off"
	marker string
	names  []string // configured upstreams, in order

	memoryFile  string // server-memory's knowledge graph
	fsDir       string // the directory server-filesystem may write
	recorderLog string
	// direct holds the upstreams' own command lines (server-memory's with a graph file
	// of its own), for a client that compares toolshed with the server itself.
	direct map[string]sdkCommand

	httpURL    string
	httpStderr *testupstream.SyncBuffer
}

// newSDKGateway writes the config of a gateway with tool search mode ("on" or "off")
// in front of the named upstreams: "everything", "memory", "filesystem", "recorder", and
// "modern", the TypeScript SDK v2 test server in modern-only mode (MCP 2026-07-28 only,
// which an old client cannot reach directly: it has no direct command line).
// At the test's end it checks that no process the test started is left.
func newSDKGateway(t *testing.T, mode string, upstreams ...string) *sdkGateway {
	t.Helper()
	return newSlowSDKGateway(t, mode, 0, upstreams...)
}

// newSlowSDKGateway is newSDKGateway with upstreams that each start delay late, as
// servers do on a loaded machine or when npx fetches them first.
func newSlowSDKGateway(t *testing.T, mode string, delay time.Duration, upstreams ...string) *sdkGateway {
	t.Helper()
	g := &sdkGateway{t: t, dir: t.TempDir(), mode: mode, names: upstreams, direct: map[string]sdkCommand{}}
	var b [8]byte
	rand.Read(b[:])
	g.marker = hex.EncodeToString(b[:])
	t.Cleanup(func() { g.checkNoProcesses("at the end of the test") })

	servers := map[string]sdkCommand{}
	for _, name := range upstreams {
		switch name {
		case "everything":
			cmd, args := testupstream.Everything(t)
			servers[name] = sdkCommand{Command: cmd, Args: args}
			g.direct[name] = servers[name]
		case "memory":
			cmd, args := testupstream.Memory(t)
			servers[name] = sdkCommand{Command: cmd, Args: args}
			g.memoryFile = strings.TrimPrefix(args[0], "MEMORY_FILE_PATH=")
			cmd, args = testupstream.Memory(t)
			g.direct[name] = sdkCommand{Command: cmd, Args: args}
		case "filesystem":
			g.fsDir = filepath.Join(g.dir, "files")
			if err := os.Mkdir(g.fsDir, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd, args := testupstream.Filesystem(t, g.fsDir)
			servers[name] = sdkCommand{Command: cmd, Args: args}
			g.direct[name] = servers[name]
		case "modern":
			cmd, args := testupstream.TS2Stdio(t, "reject", nil)
			servers[name] = sdkCommand{Command: cmd, Args: args}
		case "recorder":
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			g.recorderLog = filepath.Join(g.dir, "recorder.log")
			servers[name] = sdkCommand{Command: exe, Env: map[string]string{recorderEnv: g.recorderLog}}
		default:
			t.Fatalf("newSDKGateway: no upstream %q", name)
		}
	}
	if delay > 0 {
		for name, c := range servers {
			servers[name] = sdkCommand{Command: "/bin/sh", Args: append([]string{"-c", fmt.Sprintf(`sleep %g; exec "$0" "$@"`, delay.Seconds()), c.Command}, c.Args...), Env: c.Env}
		}
	}
	data, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	g.config = filepath.Join(g.dir, "mcp.json")
	if err := os.WriteFile(g.config, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return g
}

// startSDKGateway is newSDKGateway for a client over transport: over "http" it starts
// toolshed serve --http; over "stdio" the client will.
func startSDKGateway(t *testing.T, transport, mode string, upstreams ...string) *sdkGateway {
	t.Helper()
	g := newSDKGateway(t, mode, upstreams...)
	if transport == "http" {
		g.startHTTP()
	}
	return g
}

// serveArgs are toolshed's arguments for this gateway over stdio.
func (g *sdkGateway) serveArgs() []string {
	return []string{"serve", "--config", g.config, "--tool-search", g.mode}
}

var (
	httpURLLine  = regexp.MustCompile(`serving MCP over Streamable HTTP at (http://\S+/mcp)`)
	serversUpRow = regexp.MustCompile(`(\d+) of (\d+) servers ready`)
)

// startHTTP runs toolshed serve --http on a free port until the test ends and returns
// its endpoint once every upstream is up.
func (g *sdkGateway) startHTTP() string {
	t := g.t
	t.Helper()
	cmd := exec.Command(toolshedBin, append(g.serveArgs(), "--http", "127.0.0.1:0")...)
	testupstream.OwnGraceful(t, cmd)
	cmd.Env = append(os.Environ(), markerEnv+"="+g.marker)
	g.httpStderr = &testupstream.SyncBuffer{}
	cmd.Stderr = g.httpStderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("toolshed serve --http did not stop within 15s of SIGINT")
		}
		if t.Failed() {
			t.Logf("toolshed serve --http stderr:\n%s", g.httpStderr)
		}
		g.checkNoProcesses("after toolshed serve --http stopped")
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		log := g.httpStderr.String()
		if m := httpURLLine.FindStringSubmatch(log); m != nil && allUp(log, len(g.names)) {
			g.httpURL = m[1]
			return g.httpURL
		}
		select {
		case <-exited:
			t.Fatalf("toolshed serve --http exited:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolshed serve --http did not get its %d upstreams up in 2 minutes:\n%s", len(g.names), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// allUp reports whether toolshed's log says that all n upstreams are up.
func allUp(log string, n int) bool {
	for _, m := range serversUpRow.FindAllStringSubmatch(log, -1) {
		if up, _ := strconv.Atoi(m[1]); up == n && m[2] == strconv.Itoa(n) {
			return true
		}
	}
	return false
}

// sdkEvents are the observations a node client script printed, by step name.
type sdkEvents map[string]json.RawMessage

// get decodes the observation of a step into v, failing the test if there is none.
func (ev sdkEvents) get(t *testing.T, step string, v any) {
	t.Helper()
	raw, ok := ev[step]
	if !ok {
		t.Fatalf("the client printed no %q step; it printed %v", step, ev.steps())
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("step %q: %v\n%s", step, err, raw)
	}
}

func (ev sdkEvents) steps() []string {
	var s []string
	for k := range ev {
		s = append(s, k)
	}
	return s
}

// runClient runs a node client script from testdata (on the pinned Node 22) with
// plan as its argument, over the transport ("stdio": the script spawns toolshed; "http":
// toolshed must have been started with startHTTP) and returns what it printed. The
// script gets plan plus: transport, target (what to connect to), direct (the
// upstreams' own command lines) and stderrFile (where a spawned toolshed's stderr goes).
// After a stdio run it checks that toolshed and its upstreams exited with the client.
func (g *sdkGateway) runClient(script, transport string, plan map[string]any) sdkEvents {
	t := g.t
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	// ES modules resolve packages from the script's own directory, not NODE_PATH: put
	// a copy beside a node_modules that points at the pinned install.
	if err := os.WriteFile(filepath.Join(dir, script), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testupstream.NodeModules(t), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	full := map[string]any{"transport": transport, "mode": g.mode, "direct": g.direct, "recorderLog": g.recorderLog}
	stderrFile := filepath.Join(dir, "toolshed.stderr")
	switch transport {
	case "stdio":
		full["target"] = sdkCommand{Command: toolshedBin, Args: g.serveArgs()}
		full["stderrFile"] = stderrFile
	case "http":
		if g.httpURL == "" {
			t.Fatal("runClient over http: call startHTTP first")
		}
		full["target"] = map[string]string{"url": g.httpURL}
	default:
		t.Fatalf("runClient: no transport %q", transport)
	}
	for k, v := range plan {
		full[k] = v
	}
	arg, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testupstream.Node22(t), script, string(arg))
	cmd.Dir = dir
	cmd.Env = testupstream.ClientEnv(t, markerEnv+"="+g.marker)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	testupstream.Own(t, cmd)
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	toolshedStderr, _ := os.ReadFile(stderrFile)
	ev := sdkEvents{}
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Step string `json:"step"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Step != "" {
			ev[line.Step] = append(json.RawMessage(nil), sc.Bytes()...)
		}
	}
	if os.Getenv("TOOLSHED_E2E_VERBOSE") != "" {
		t.Logf("node %s over %s printed:\n%s\nstderr:\n%s", script, transport, stdout.Bytes(), stderr.Bytes())
	}
	if err != nil || ctx.Err() != nil {
		t.Fatalf("node %s over %s: %v (context: %v)\nstdout:\n%s\nstderr:\n%s\ntoolshed stderr:\n%s", script, transport, err, ctx.Err(), stdout.Bytes(), stderr.Bytes(), toolshedStderr)
	}
	if len(toolshedStderr) > 0 {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("toolshed stderr (spawned by the client over stdio):\n%s", toolshedStderr)
			}
		})
	}
	var conn struct{ ProtocolVersion string }
	if _, ok := ev["connected"]; ok {
		ev.get(t, "connected", &conn)
		t.Logf("%s over %s speaks protocol %s with toolshed", script, transport, conn.ProtocolVersion)
	}
	if transport == "stdio" {
		g.checkNoProcesses("after the stdio client closed")
	}
	return ev
}

// checkNoProcesses fails the test if a process that carries the test's marker (node,
// toolshed, an upstream) is still running a while after it should have stopped, and
// kills what it finds.
func (g *sdkGateway) checkNoProcesses(when string) {
	g.t.Helper()
	checkNoMarkedProcesses(g.t, g.marker, when)
}

// checkNoMarkedProcesses fails the test if a process that carries marker is still
// running 15 seconds after when, and kills what it finds.
func checkNoMarkedProcesses(t *testing.T, marker, when string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Logf("leftover processes are checked only on Linux (/proc)")
		return
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := markedProcesses(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var lines []string
			for pid, cmdline := range left {
				lines = append(lines, fmt.Sprintf("%d: %s", pid, cmdline))
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("%s, these processes were still running 15s later (now killed):\n%s", when, strings.Join(lines, "\n"))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// markedProcesses returns the live processes whose environment holds the marker, with
// their command lines.
func markedProcesses(marker string) map[int]string {
	want := []byte(markerEnv + "=" + marker + "\x00")
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			// A zombie has exited; its parent just has not reaped it yet.
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && bytes.HasPrefix(stat[i+1:], []byte(" Z")) {
				continue
			}
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[pid] = strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return out
}
