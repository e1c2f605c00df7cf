//go:build e2e && unix

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/nginx"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// What the replica tests share: toolshed serve --http replicas (separate processes,
// each with its own npm servers: everything and filesystem) behind Debian's nginx with
// the config toolshed ships (deploy/nginx), and clients of the go-sdk and of the
// TypeScript SDK whose every answer is checked.

// replica is one toolshed serve --http.
type replica struct {
	id     string
	addr   string // host:port
	cmd    *exec.Cmd
	stderr *testupstream.SyncBuffer
	exited chan struct{}
}

// replicaSet is the replicas, their nginx, and the files the sessions read.
type replicaSet struct {
	t        *testing.T
	gw       *sdkGateway // the config and the leftover-process check
	replicas []*replica
	nginx    *nginx.Proc
	url      string // nginx's /mcp
	files    []sessionFile
}

type sessionFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// startReplicas starts n replicas (toolshed-1 ... toolshed-n), with --stateless when
// stateless, behind nginx with the shipped config for the mode, and writes files
// sessions files for the sessions to read.
func startReplicas(t *testing.T, n int, stateless bool, files int) *replicaSet {
	t.Helper()
	if _, err := nginx.Bin(); err != nil {
		testupstream.Missing(t, "nginx", "apt-get install nginx", err)
	}
	rs := &replicaSet{t: t, gw: newSDKGateway(t, "on", "everything", "filesystem")}
	for i := range files {
		f := sessionFile{Path: filepath.Join(rs.gw.fsDir, fmt.Sprintf("session-%03d.txt", i)), Content: fmt.Sprintf("session %d of %s", i, t.Name())}
		if err := os.WriteFile(f.Path, []byte(f.Content), 0o644); err != nil {
			t.Fatal(err)
		}
		rs.files = append(rs.files, f)
	}
	var wg sync.WaitGroup
	rs.replicas = make([]*replica, n)
	errs := make([]error, n)
	for i := range n {
		args := append(rs.gw.serveArgs(), "--http", "127.0.0.1:0", "--replica-id", fmt.Sprintf("toolshed-%d", i+1), "--db", "off")
		if stateless {
			args = append(args, "--stateless")
		}
		r := launchReplica(t, fmt.Sprintf("toolshed-%d", i+1), args, rs.gw.marker)
		rs.replicas[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.addr, errs[i] = r.wait(len(rs.gw.names))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, n)
	for i, r := range rs.replicas {
		addrs[i] = r.addr
	}
	listen := testupstream.FreeAddr(t)
	name := nginx.Affinity
	if stateless {
		name = nginx.Stateless
	}
	p, err := nginx.Start(filepath.Join(testupstream.Root(t), "deploy", "nginx"), name, addrs, listen)
	if err != nil {
		t.Fatal(err)
	}
	rs.nginx = p
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nginx error log:\n%s", p.ErrorLog())
		}
		p.Stop()
	})
	rs.url = "http://" + listen + "/mcp"
	return rs
}

// launchReplica starts toolshed with args as replica id, stopped (SIGINT) when the
// test ends; wait tells when it is up.
func launchReplica(t *testing.T, id string, args []string, marker string) *replica {
	t.Helper()
	r := &replica{id: id, cmd: exec.Command(toolshedBin, args...), stderr: &testupstream.SyncBuffer{}, exited: make(chan struct{})}
	testupstream.OwnGraceful(t, r.cmd)
	r.cmd.Env = append(os.Environ(), markerEnv+"="+marker)
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		r.cmd.Process.Signal(os.Interrupt)
		select {
		case <-r.exited:
		case <-time.After(15 * time.Second):
			r.cmd.Process.Kill()
			<-r.exited
			t.Errorf("%s did not stop within 15s of SIGINT", r.id)
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", r.id, r.stderr)
		}
	})
	return r
}

// wait returns the replica's address once its upstreams are up.
func (r *replica) wait(upstreams int) (string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		log := r.stderr.String()
		if m := httpURLLine.FindStringSubmatch(log); m != nil && allUp(log, upstreams) {
			return strings.TrimSuffix(strings.TrimPrefix(m[1], "http://"), "/mcp"), nil
		}
		select {
		case <-r.exited:
			return "", fmt.Errorf("%s exited:\n%s", r.id, log)
		default:
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s did not get its upstreams up in 2 minutes:\n%s", r.id, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill kills replica i (toolshed-i+1) with SIGKILL, as a node that dies does.
func (rs *replicaSet) kill(i int) {
	r := rs.replicas[i]
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		rs.t.Fatal(err)
	}
	<-r.exited
}

// owner returns the address of the replica a session id names ("" for none).
func (rs *replicaSet) owner(session string) string {
	for _, r := range rs.replicas {
		if strings.HasPrefix(session, r.id+".") {
			return r.addr
		}
	}
	return ""
}

// goSession is a go-sdk client session through nginx, with its own HTTP client.
type goSession struct {
	n          int
	hc         *http.Client
	cs         *mcp.ClientSession
	ids        []string // the session ids it had, in order
	reconnects int
}

func (rs *replicaSet) connectGo(ctx context.Context, s *goSession) error {
	if s.hc == nil {
		s.hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("go-replica-%d", s.n), Version: "1"}, nil).
		// A session of 2025-11-25: sessions and their affinity are what these tests are
		// about, and a client of 2026-07-28 (the SDK's default) has none.
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rs.url, HTTPClient: s.hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	s.cs = cs
	s.ids = append(s.ids, cs.ID())
	return nil
}

// goRound runs one round on s (search, describe, echo, read of the session's file),
// each request bounded by 30 s; it returns the first error and what was wrong with
// the answers.
func (rs *replicaSet) goRound(ctx context.Context, s *goSession, round int) (bad []string, err error) {
	call := func(name string, args any) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return "", err
		}
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, "\n"), nil
	}
	text, err := call("tool_search", map[string]any{"query": "read the contents of a text file", "limit": 10})
	if err != nil {
		return nil, err
	}
	if !strings.Contains(text, `"filesystem__read_text_file"`) {
		bad = append(bad, "search: "+text)
	}
	if text, err = call("tool_describe", map[string]any{"name": "everything__echo"}); err != nil {
		return bad, err
	}
	var def struct{ Name string }
	if json.Unmarshal([]byte(text), &def); def.Name != "everything__echo" {
		bad = append(bad, "describe: "+text)
	}
	msg := fmt.Sprintf("go session %d round %d %d", s.n, round, time.Now().UnixNano())
	if text, err = call("tool_call", map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": msg}}); err != nil {
		return bad, err
	}
	if text != "Echo: "+msg {
		bad = append(bad, fmt.Sprintf("echo: want %q, got %q", msg, text))
	}
	f := rs.files[s.n]
	if text, err = call("tool_call", map[string]any{"name": "filesystem__read_text_file", "arguments": map[string]any{"path": f.Path}}); err != nil {
		return bad, err
	}
	if text != f.Content {
		bad = append(bad, fmt.Sprintf("read: want %q, got %q", f.Content, text))
	}
	return bad, nil
}

// tsClient is testdata/replicas_client.mjs running on the pinned Node 22.
type tsClient struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan map[string]any
	exited chan struct{}
	stderr *testupstream.SyncBuffer
}

// startTS runs the TypeScript SDK client with sessions sessions of rounds rounds before
// and after its pause, reading the set's files from index first.
func (rs *replicaSet) startTS(sessions, rounds, first int) *tsClient {
	t := rs.t
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "replicas_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "replicas_client.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testupstream.NodeModules(t), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	plan, _ := json.Marshal(map[string]any{"url": rs.url, "sessions": sessions, "rounds": rounds, "files": rs.files[first : first+sessions]})
	c := &tsClient{cmd: exec.Command(testupstream.Node22(t), filepath.Join(dir, "replicas_client.mjs"), string(plan)), events: make(chan map[string]any, 1024), exited: make(chan struct{}), stderr: &testupstream.SyncBuffer{}}
	c.cmd.Env = append(testupstream.ClientEnv(t), markerEnv+"="+rs.gw.marker)
	testupstream.Own(t, c.cmd)
	c.cmd.Stderr = c.stderr
	c.stdin, _ = c.cmd.StdinPipe()
	stdout, _ := c.cmd.StdoutPipe()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				c.events <- ev
			}
		}
		c.cmd.Wait()
		close(c.events)
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.exited
		if t.Failed() {
			t.Logf("the TypeScript client's stderr:\n%s", c.stderr)
		}
	})
	return c
}

// until collects the client's events up to the one of step (within 3 minutes).
func (c *tsClient) until(t *testing.T, step string) []map[string]any {
	t.Helper()
	var got []map[string]any
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				t.Fatalf("the TypeScript client exited before %q; it printed %v", step, got)
			}
			got = append(got, ev)
			if ev["step"] == step {
				return got
			}
		case <-timeout:
			t.Fatalf("the TypeScript client did not reach %q within 3 minutes (no client may hang); it printed %v", step, got)
		}
	}
}

// resume lets the client go on after its pause.
func (c *tsClient) resume(t *testing.T) {
	if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
}

// decodeEvent decodes one of the TypeScript client's events into v.
func decodeEvent(t *testing.T, ev map[string]any, v any) {
	t.Helper()
	data, _ := json.Marshal(ev)
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}
