package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// eachStartGated returns a server whose every start waits until the test calls open, as
// a start that installs the server first does: a shell that writes its pid to a file,
// waits for a gate file, takes it away (so that the next start waits again), then
// execs the command, which keeps the pid. pid reads the pid of the last start.
func eachStartGated(t *testing.T, name, cmd string, args []string) (srv config.Server, open func(), pid func() int) {
	dir := t.TempDir()
	gate, pidFile := filepath.Join(dir, "gate"), filepath.Join(dir, "pid")
	script := "echo $$ > " + testupstream.ShellLine(pidFile, nil) +
		"; while [ ! -e " + testupstream.ShellLine(gate, nil) + " ]; do sleep 0.05; done; rm -f " + testupstream.ShellLine(gate, nil) +
		"; exec " + testupstream.ShellLine(cmd, args)
	open = func() {
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pid = func() int {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return config.Server{Name: name, Type: config.Stdio, Command: "sh", Args: []string{"-c", script}}, open, pid
}

// waitLog waits until the gateway's log has want.
func waitLog(t *testing.T, h *harness, want string) {
	t.Helper()
	waitFor(t, "the log to say "+strconv.Quote(want), func() bool { return strings.Contains(h.log.String(), want) })
}

// A stdio server's start that may install it first (npx -y) is not cut short at the
// bound of a start of a server that has been up: with that bound at 1 s, the real npm
// memory server held back past it, as npm installing it would, starts once let go,
// in its first start, and toolshed said on stderr that it was still starting and for
// how long it may. Once it has been up, a restart is bounded by 1 s again; a server
// whose connect_timeout the config sets is bounded by it from its first start, and so
// is an HTTP server, which installs nothing.
func TestFirstStartMayInstall(t *testing.T) {
	mcmd, margs := testupstream.Memory(t)
	memory, open, pid := eachStartGated(t, "memory", mcmd, margs)
	pinned, _, _ := eachStartGated(t, "pinned", mcmd, margs)
	pinned.ConnectTimeout = time.Second
	never := make(chan struct{})
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // an HTTP server that never answers
		case <-never:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(never); remote.Close() })
	cfg := &config.Config{Servers: []config.Server{memory, pinned, {Name: "remote", Type: config.HTTP, URL: remote.URL + "/mcp"}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off, WaitForClient: true, StartWait: 2 * time.Second,
		ConnectTimeout: time.Second, FirstStartTimeout: 2 * time.Minute})
	h.client("", nil) // the servers start

	// Past the start-up wait, which is past the 1 s bound.
	waitLog(t, h, "toolshed: memory is still starting after 2s; a first start may install it (npx -y, uvx), so toolshed gives it up to 2m0s; meanwhile clients are answered without its tools, and told when it is up (notifications/tools/list_changed)\n")
	if st := status(h, "memory"); st.State != gateway.Connecting || st.Restarts != 0 {
		t.Fatalf("memory's first start, past 1s: %+v, want still in its first start", st)
	}
	for _, name := range []string{"pinned", "remote"} {
		waitFor(t, name+" to fail", func() bool { return status(h, name).State == gateway.Failed })
		if st := status(h, name); st.Err == nil || !strings.Contains(st.Err.Error(), "within 1s (connect_timeout)") {
			t.Errorf("%s's first start ended with %v, want it bounded by 1s", name, st.Err)
		}
	}
	if log := h.log.String(); strings.Contains(log, "pinned is still starting") || strings.Contains(log, "remote is still starting") {
		t.Errorf("a server bounded by 1s is said to be still starting after 2s:\n%s", log)
	}

	open()
	waitFor(t, "memory to be up", func() bool { return status(h, "memory").State == gateway.Ready })
	if st := status(h, "memory"); st.Restarts != 0 || st.Tools == 0 {
		t.Fatalf("memory is up as %+v, want its first start, with its tools", st)
	}

	// Up once: a restart that takes longer than 1s is cut short.
	if err := syscall.Kill(pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "memory's restart to fail", func() bool { return status(h, "memory").Restarts >= 2 })
	if st := status(h, "memory"); st.Err == nil || !strings.Contains(st.Err.Error(), "did not finish starting within 1s (connect_timeout)") {
		t.Errorf("memory's restart ended with %v, want it bounded by 1s", st.Err)
	}
}

// A server that never comes up is bounded too: each of its starts, until it has been
// up, by the bound of a start that may install it, whose error says how to allow more.
func TestFirstStartBounded(t *testing.T) {
	stuck, _, _ := eachStartGated(t, "stuck", "true", nil)
	h := startGateway(t, &config.Config{Servers: []config.Server{stuck}}, gateway.Options{Mode: policy.Off, WaitForClient: true,
		StartWait: 500 * time.Millisecond, ConnectTimeout: 200 * time.Millisecond, FirstStartTimeout: time.Second})
	h.client("", nil)
	const want = "did not finish starting within 1s, the bound of its starts until it has been up once, as a start may install it first (npx -y, uvx); if it needs longer, set its connect_timeout"
	for restarts := 1; restarts <= 2; restarts++ {
		waitFor(t, "stuck to fail", func() bool { return status(h, "stuck").Restarts >= restarts })
		if st := status(h, "stuck"); st.Err == nil || st.Err.Error() != want {
			t.Errorf("start %d of a server never up ended with %v, want %q", restarts, st.Err, want)
		}
	}
	waitLog(t, h, "toolshed: stuck is still starting after 500ms")
}
