// Package testupstream locates and runs the real MCP components that toolshed's
// tests use as upstreams and as judges: the reference MCP servers from npm
// (server-everything, server-memory, server-filesystem), the go-sdk's conformance
// everything-server, the MCP Inspector CLI and the MCP conformance suite.
//
// It is for tests only. Nothing is fetched here: `bash scripts/deps.sh` (which
// `bash scripts/test.sh` runs before go test) installs everything into .deps/ at
// the repo root, pinned by scripts/npm/servers/package-lock.json and go.mod; with
// --e2e it installs the agent clients of the end-to-end tests too, pinned by
// scripts/npm/clients/package-lock.json (see clients.go). When something is missing
// or out of date the helpers fail the test (t.Fatalf, never t.Skip) with a message
// that says what to run. System programs some tests need (PostgreSQL, Chromium,
// nginx, buildah) are another matter: see Missing.
//
// Node versions: the three npm servers run on the machine's node when it is
// Node 20 or newer (they run fine on Node 20), else on the pinned Node 22. The
// Inspector (engines >=22.19) and the conformance suite (uses fs.globSync, so
// it crashes on Node 20) always run on the pinned Node 22 from .deps/npm.
package testupstream

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ModulePath is the module whose go.mod marks the repo root.
const ModulePath = "github.com/toolshed/toolshed"

// installHint says how to install what the quick suite needs.
const installHint = "run `bash scripts/deps.sh` from the repo root (`bash scripts/test.sh` runs it before go test)"

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// Root returns the repo root: the nearest directory at or above the working
// directory whose go.mod declares ModulePath.
func Root(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() { rootDir, rootErr = findRoot() })
	if rootErr != nil {
		t.Fatalf("testupstream: %v", rootErr)
	}
	return rootDir
}

func findRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePath(data) == ModulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s at or above %s", ModulePath, wd)
		}
		dir = parent
	}
}

func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// DepsDir is .deps under the repo root, where scripts/deps.sh installs.
func DepsDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(Root(t), ".deps")
}

// An npmSet is one of the npm installs of scripts/deps.sh: the servers (in
// .deps/npm, for every suite), the OAuth components (in .deps/auth, for every suite)
// or the agent clients (in .deps/clients, for the end-to-end suite only).
type npmSet struct {
	src, dir string // scripts/npm/<src>, installed into .deps/<dir>
	hint     string // what to run when it is missing or stale
	once     sync.Once
	err      string
}

var (
	npmServers = &npmSet{src: "servers", dir: "npm", hint: installHint}
	npmClients = &npmSet{src: "clients", dir: "clients",
		hint: "run `bash scripts/deps.sh --e2e` from the repo root (`bash scripts/test.sh --e2e` runs it before go test)"}
)

// check fails the test unless .deps/<dir> holds an install of the current
// scripts/npm/<src> lockfile (scripts/deps.sh writes the same hash to its .stamp),
// and returns that directory.
func (s *npmSet) check(t testing.TB) string {
	t.Helper()
	root := Root(t)
	dir := filepath.Join(root, ".deps", s.dir)
	s.once.Do(func() {
		h := sha256.New()
		for _, f := range []string{"package.json", "package-lock.json"} {
			data, err := os.ReadFile(filepath.Join(root, "scripts", "npm", s.src, f))
			if err != nil {
				s.err = fmt.Sprintf("cannot read scripts/npm/%s/%s: %v", s.src, f, err)
				return
			}
			h.Write(data)
		}
		want := hex.EncodeToString(h.Sum(nil))
		got, err := os.ReadFile(filepath.Join(dir, ".stamp"))
		switch {
		case err != nil:
			s.err = fmt.Sprintf("the npm test components of scripts/npm/%s are not installed (no %s): %s", s.src, filepath.Join(dir, ".stamp"), s.hint)
		case strings.TrimSpace(string(got)) != want:
			s.err = fmt.Sprintf("the npm test components in %s are out of date with scripts/npm/%s/package-lock.json: %s", dir, s.src, s.hint)
		}
	})
	if s.err != "" {
		t.Fatalf("testupstream: %s", s.err)
	}
	return dir
}

// file returns the path of a file inside the set's node_modules.
func (s *npmSet) file(t testing.TB, what, rel string) string {
	t.Helper()
	dir := s.check(t)
	path := filepath.Join(dir, "node_modules", filepath.FromSlash(rel))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("testupstream: %s not found at %s: %s", what, path, s.hint)
	}
	return path
}

// mustExist fails the test naming scripts/deps.sh when path does not exist.
func mustExist(t testing.TB, what, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("testupstream: %s not found at %s: %s", what, path, installHint)
	}
	return path
}

// npmFile returns the path of a file inside .deps/npm/node_modules, the servers' install.
func npmFile(t testing.TB, what, rel string) string {
	t.Helper()
	return npmServers.file(t, what, rel)
}

// Node22 returns the pinned Node 22 binary installed by scripts/deps.sh (the npm
// package "node"), which runs the Inspector and the conformance suite.
func Node22(t testing.TB) string {
	t.Helper()
	return npmFile(t, "Node 22 (npm package node)", "node/bin/node")
}

var (
	nodeOnce sync.Once
	nodePath string
)

// Node returns the node that runs the npm MCP servers: the machine's node when it
// is Node 20 or newer, else Node22.
func Node(t testing.TB) string {
	t.Helper()
	nodeOnce.Do(func() {
		p, err := exec.LookPath("node")
		if err != nil {
			return
		}
		out, err := exec.Command(p, "--version").Output()
		if err != nil {
			return
		}
		major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".")
		if n, err := strconv.Atoi(major); err == nil && n >= 20 {
			nodePath = p
		}
	})
	if nodePath != "" {
		npmServers.check(t)
		return nodePath
	}
	return Node22(t)
}

// Everything returns the command line of @modelcontextprotocol/server-everything
// over stdio.
func Everything(t testing.TB) (command string, args []string) {
	t.Helper()
	node := Node(t)
	script := npmFile(t, "@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-everything/dist/index.js")
	return node, []string{script, "stdio"}
}

// EverythingFile returns the path of the file rel (slash-separated, relative to the
// package's directory) of the installed @modelcontextprotocol/server-everything, for a
// test that compares what toolshed serves with the server's own files.
func EverythingFile(t testing.TB, rel string) string {
	t.Helper()
	return npmFile(t, "@modelcontextprotocol/server-everything's "+rel, "@modelcontextprotocol/server-everything/"+rel)
}

// Memory returns the command line of @modelcontextprotocol/server-memory over
// stdio. The server takes its knowledge-graph file only from the environment
// (MEMORY_FILE_PATH, default: next to its own script), so the command is
// `env MEMORY_FILE_PATH=<fresh t.TempDir()>/memory.jsonl node .../index.js`:
// each call gets an empty graph of its own, and args[0] names the file.
func Memory(t testing.TB) (command string, args []string) {
	t.Helper()
	node := Node(t)
	script := npmFile(t, "@modelcontextprotocol/server-memory", "@modelcontextprotocol/server-memory/dist/index.js")
	env, err := exec.LookPath("env")
	if err != nil {
		t.Fatalf("testupstream: env(1) not found: %v", err)
	}
	file := filepath.Join(t.TempDir(), "memory.jsonl")
	return env, []string{"MEMORY_FILE_PATH=" + file, node, script}
}

// Filesystem returns the command line of @modelcontextprotocol/server-filesystem
// over stdio, allowed to access dirs (made absolute), or a fresh t.TempDir() when
// none is given.
func Filesystem(t testing.TB, dirs ...string) (command string, args []string) {
	t.Helper()
	node := Node(t)
	script := npmFile(t, "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-filesystem/dist/index.js")
	if len(dirs) == 0 {
		dirs = []string{t.TempDir()}
	}
	args = []string{script}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			t.Fatalf("testupstream: %v", err)
		}
		args = append(args, abs)
	}
	return node, args
}

var goSDKRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/modelcontextprotocol/go-sdk\s+(v\S+)`)

// ConformanceServer returns the path of the go-sdk's conformance
// everything-server built by scripts/deps.sh. Run bare it serves MCP over stdio;
// with -http=ADDR it serves streamable HTTP (see ConformanceHTTP).
func ConformanceServer(t testing.TB) string {
	t.Helper()
	return goSDKProgram(t, "everything-server")
}

// ConformanceClient returns the path of the go-sdk's conformance everything-client
// built by scripts/deps.sh: `everything-client URL` runs the scenario that
// MCP_CONFORMANCE_SCENARIO names against the server at URL, as the conformance suite's
// client role expects of a client.
func ConformanceClient(t testing.TB) string {
	t.Helper()
	return goSDKProgram(t, "everything-client")
}

// goSDKProgram returns .deps/bin/NAME, a program of the go-sdk's conformance
// directory, failing the test unless scripts/deps.sh built it from the go-sdk
// version go.mod requires.
func goSDKProgram(t testing.TB, name string) string {
	t.Helper()
	root := Root(t)
	bin := mustExist(t, "the go-sdk conformance "+name, filepath.Join(root, ".deps", "bin", name))
	if gomod, err := os.ReadFile(filepath.Join(root, "go.mod")); err == nil {
		if m := goSDKRequire.FindSubmatch(gomod); m != nil {
			want := "github.com/modelcontextprotocol/go-sdk/conformance/" + name + "@" + string(m[1])
			got, _ := os.ReadFile(bin + ".stamp")
			if strings.TrimSpace(string(got)) != want {
				t.Fatalf("testupstream: %s was not built from %s (go.mod): %s", bin, want, installHint)
			}
		}
	}
	return bin
}

// ConformanceHTTP starts the conformance everything-server on a free 127.0.0.1
// port, waits until it answers HTTP, stops it in t.Cleanup and returns its MCP
// endpoint URL (http://127.0.0.1:PORT/mcp; the server answers on every path).
//
// It runs in stateful mode (-stateless=false): the server's default, stateless
// mode cannot send requests to the client, so the sampling and elicitation
// scenarios of the conformance suite fail against it. extraArgs are appended to
// the server's flags (the last value of a flag wins, e.g. "-stateless=true").
func ConformanceHTTP(t testing.TB, extraArgs ...string) (url string) {
	t.Helper()
	bin := ConformanceServer(t)
	return serveHTTP(t, "the conformance everything-server", 15*time.Second, func(addr string) *exec.Cmd {
		return exec.Command(bin, append([]string{"-http=" + addr, "-stateless=false"}, extraArgs...)...)
	})
}

// serveHTTP starts the server command(addr) makes to listen on addr, a free 127.0.0.1
// port, owned by the test (see Own) and stopped at its end, and returns its MCP
// endpoint URL (http://ADDR/mcp) once it answers HTTP, within wait. A server that
// exits first most likely lost the port to another process in between: it is started
// again on another, three times in all. what names the server in failures and in the
// log a failed test prints.
func serveHTTP(t testing.TB, what string, wait time.Duration, command func(addr string) *exec.Cmd) string {
	t.Helper()
	var lastLog string
	for attempt := 0; attempt < 3; attempt++ {
		addr := FreeAddr(t)
		cmd := command(addr)
		log := new(SyncBuffer)
		cmd.Stdout, cmd.Stderr = log, log
		Own(t, cmd)
		if err := cmd.Start(); err != nil {
			t.Fatalf("testupstream: starting %s: %v", what, err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		url := "http://" + addr + "/mcp"
		if waitHTTP(url, done, wait) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-done
				if t.Failed() {
					t.Logf("%s at %s, its log:\n%s", what, url, log.String())
				}
			})
			return url
		}
		_ = cmd.Process.Kill()
		<-done
		lastLog = log.String()
	}
	t.Fatalf("testupstream: %s did not come up on 127.0.0.1; its log:\n%s", what, lastLog)
	return ""
}

// FreeAddr returns a 127.0.0.1 address no one listens on, for a server to listen on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testupstream: finding a free port: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// waitHTTP polls url until any HTTP response comes back (the server answers GET
// with 405), the process exits (done closed) or the timeout passes.
func waitHTTP(url string, done <-chan struct{}, timeout time.Duration) bool {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return false
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			return true
		}
		time.Sleep(25 * time.Millisecond)
	}
	return false
}

// SyncBuffer is output (a process's stderr, a gateway's log) that a test reads while
// it is being written.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Chromium returns the path of headless Chromium, or ends the test with Missing.
func Chromium(t testing.TB) string {
	t.Helper()
	return Program(t, "Chromium", "apt-get install chromium", "chromium", "chromium-browser")
}

// npmAuth is the third npm install of scripts/deps.sh: the OAuth components of the
// sign-in tests (oidc-provider, the MCP TypeScript SDK v1), which internal/testoidc runs.
var npmAuth = &npmSet{src: "auth", dir: "auth", hint: installHint}

// AuthModules returns .deps/auth/node_modules, where scripts/deps.sh installs
// scripts/npm/auth, failing the test with what to run when it is missing or stale.
func AuthModules(t testing.TB) string {
	t.Helper()
	return filepath.Join(npmAuth.check(t), "node_modules")
}
