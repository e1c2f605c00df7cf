package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// The toolshed deployments of TestProtocolMatrix: its config, the upstreams' wire logs,
// and what the test does to them.

// deployment is one toolshed config with every upstream of the matrix, and what the
// test needs to watch and poke them: each upstream's wire log, the late file that makes
// the TS servers add their tool, server-everything's process ids.
type deployment struct {
	config string
	wire   map[string]string // server name → the file its received messages go to
	late   string
	pids   string
	ref    map[string]map[string]map[string]any // server → tool → its definition, as the server lists it

	// Cells that cancel a call on an upstream count here, so that a cell can wait for
	// as many notifications/cancelled at the upstream as there were cancels.
	cancels map[string]*atomic.Int32
	// Server-everything asks its client the old way (elicitation, roots), with no link
	// to the call: while calls of two clients run on it, toolshed cannot tell whose
	// session to ask, and says so. The clients of one deployment take turns for their
	// cells on it.
	oldCell sync.Mutex

	lateStage, killStage *stage
}

// newDeployment writes the config of a toolshed that users clients share.
func newDeployment(t *testing.T, name string, users int) *deployment {
	dir := t.TempDir()
	d := &deployment{
		wire:    map[string]string{},
		late:    filepath.Join(dir, "late"),
		pids:    filepath.Join(dir, "old.pids"),
		cancels: map[string]*atomic.Int32{},
	}
	for _, u := range matrixUpstreams {
		d.wire[u.name] = filepath.Join(dir, u.name+".wire")
		d.cancels[u.name] = &atomic.Int32{}
	}
	env := func(u string) map[string]string { return map[string]string{"WIRE_LOG": d.wire[u], "LATE": d.late} }
	rcmd, rargs := testupstream.TS2Stdio(t, "reject", env("rejstdio"))
	bcmd, bargs := testupstream.TS2Stdio(t, "serve", env("both"))
	ecmd, eargs := testupstream.Everything(t)
	// server-everything, with what it receives copied to its wire log (tee through a
	// fifo; a background job's stdin is /dev/null unless redirected, so fd 3 keeps
	// toolshed's pipe) and its pid written down so that the test can kill it. The
	// server is the process toolshed started (exec), so toolshed sees it die.
	oldScript := `wire=$1; pids=$2; shift 2; fifo="$pids.$$"; mkfifo "$fifo" || exit 1; exec 3<&0; ` +
		`tee -a "$wire" <&3 >"$fifo" 2>/dev/null & echo $$ >> "$pids"; exec "$@" <"$fifo" 3<&-`
	servers := map[string]any{
		"old":      map[string]any{"command": "sh", "args": append([]string{"-c", oldScript, "sh", d.wire["old"], d.pids, ecmd}, eargs...)},
		"rejstdio": map[string]any{"command": rcmd, "args": rargs},
		"rejhttp":  map[string]any{"url": testupstream.TS2HTTP(t, "reject", env("rejhttp"))},
		"both":     map[string]any{"command": bcmd, "args": bargs},
	}
	// Tool search is on. The tools a cell calls directly are pinned, and so listed as
	// their servers define them; the TS server's confirm and server-everything's
	// get-sum stay deferred, for tool_search, tool_describe and tool_call to find.
	var pins []map[string]any
	for _, name := range []string{"echo", "slow", "late", "trigger-long-running-operation", "trigger-elicitation-request"} {
		pins = append(pins, map[string]any{"name": name, "alwaysLoad": true})
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers, "tools": pins})
	d.config = filepath.Join(dir, name+".json")
	if err := os.WriteFile(d.config, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d.ref = matrixReference(t)
	d.lateStage = newStage(users, func() {
		if err := os.WriteFile(d.late, nil, 0o644); err != nil {
			t.Errorf("writing the late file: %v", err)
		}
	})
	d.killStage = newStage(users, func() {
		pid := d.oldPid(t)
		if pid == 0 {
			t.Errorf("server-everything wrote no pid to %s", d.pids)
			return
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Errorf("killing server-everything (pid %d): %v", pid, err)
		}
	})
	return d
}

// oldPid returns the pid of the server-everything that runs now (the last written).
func (d *deployment) oldPid(t *testing.T) int {
	data, err := os.ReadFile(d.pids)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	if len(lines) == 0 {
		return 0
	}
	pid, _ := strconv.Atoi(lines[len(lines)-1])
	return pid
}

var (
	referenceOnce sync.Once
	reference     map[string]map[string]map[string]any
)

// matrixReference lists each kind of upstream directly with the go-sdk client (at
// 2025-11-25 for server-everything, declaring elicitation as toolshed does once its
// clients do; by default for the TS server, which is the same script in every mode),
// once per run.
func matrixReference(t *testing.T) map[string]map[string]map[string]any {
	referenceOnce.Do(func() {
		list := func(transport mcp.Transport, pin string) map[string]map[string]any {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "matrix-reference", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "decline"}, nil
				},
			})
			var opts *mcp.ClientSessionOptions
			if pin != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: pin}
			}
			cs, err := client.Connect(ctx, transport, opts)
			if err != nil {
				t.Fatalf("listing an upstream directly: %v", err)
			}
			defer cs.Close()
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("listing an upstream directly: %v", err)
			}
			b, _ := json.Marshal(res)
			return toolMembers(t, b)
		}
		ecmd, eargs := testupstream.Everything(t)
		e := exec.Command(ecmd, eargs...)
		testupstream.Own(t, e)
		reference = map[string]map[string]map[string]any{
			"old": list(&mcp.CommandTransport{Command: e}, "2025-11-25"),
			"ts2": list(&mcp.StreamableClientTransport{Endpoint: testupstream.TS2HTTP(t, "reject", nil)}, ""),
		}
	})
	if reference == nil {
		t.Fatal("the upstreams could not be listed directly (see the first test that tried)")
	}
	return reference
}

// toolMembers splits a tools/list result into each tool's members, by tool name.
func toolMembers(t *testing.T, result json.RawMessage) map[string]map[string]any {
	var r struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("tools/list result %s: %v", result, err)
	}
	out := map[string]map[string]any{}
	for _, tool := range r.Tools {
		name, _ := tool["name"].(string)
		out[name] = tool
	}
	return out
}

// arrivals are one client's arrivals at the stages of a deployment, each once.
type arrivals struct{ late, kill func() }

// arrivals makes a client's arrivals; a client that stops early (it could not connect,
// or a step failed fatally) still arrives through all, so that the others go on.
func (d *deployment) arrivals() arrivals {
	return arrivals{sync.OnceFunc(d.lateStage.arrive), sync.OnceFunc(d.killStage.arrive)}
}

func (a arrivals) all() { a.late(); a.kill() }

// stage runs action once n clients have arrived, and then lets them all on.
type stage struct {
	mu     sync.Mutex
	left   int
	action func()
	open   chan struct{}
}

func newStage(n int, action func()) *stage {
	return &stage{left: n, action: action, open: make(chan struct{})}
}

func (s *stage) arrive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left--
	if s.left == 0 {
		s.action()
		close(s.open)
	}
}

// wait returns once every client has arrived, false if that took over 3 minutes.
func (s *stage) wait() bool {
	select {
	case <-s.open:
		return true
	case <-time.After(3 * time.Minute):
		return false
	}
}
