//go:build e2e && linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// What the shutdown tests share: toolshed run as a process the test signals and whose
// exit it times, and an upstream whose processes can be found afterwards. They read
// /proc, hence linux.

// signalledProc is toolshed running as a separate process, for a test to signal.
type signalledProc struct {
	cmd    *exec.Cmd
	stderr *testupstream.SyncBuffer
	stdin  io.WriteCloser // stdio front only
	lines  chan []byte    // stdout, line by line (stdio front only)
	exited chan struct{}
	code   int       // exit status, -1 when a signal ended it; set once exited is closed
	at     time.Time // when it exited
}

// startSignalled starts toolshed with args, and env (KEY=VALUE) added to its
// environment. With stdio set, the test talks to it on its stdin and stdout. The process
// is killed at the end of the test if it is still running.
func startSignalled(t *testing.T, stdio bool, env []string, args ...string) *signalledProc {
	t.Helper()
	p := &signalledProc{cmd: exec.Command(toolshedBin, args...), stderr: &testupstream.SyncBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), testupstream.ClientEnv(t)...), env...)
	testupstream.OwnGraceful(t, p.cmd)
	p.cmd.Stderr = p.stderr
	var stdout io.Reader
	if stdio {
		var err error
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if stdout, err = p.cmd.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if stdio {
		p.lines = make(chan []byte, 1024)
		go func() {
			r := bufio.NewReaderSize(stdout, 1<<20)
			for {
				b, err := r.ReadBytes('\n')
				if err != nil {
					close(p.lines)
					return
				}
				p.lines <- b
			}
		}()
	}
	go func() {
		p.cmd.Wait()
		p.code, p.at = p.cmd.ProcessState.ExitCode(), time.Now()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("toolshed stderr:\n%s", p.stderr)
		}
	})
	return p
}

// signal sends sig to toolshed and returns when it was sent.
func (p *signalledProc) signal(t *testing.T, sig syscall.Signal) time.Time {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("sending %v: %v", sig, err)
	}
	return time.Now()
}

// waitExit waits up to limit for toolshed to exit and returns its exit status; the test
// fails if it is still running then.
func (p *signalledProc) waitExit(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.code
	case <-time.After(limit):
		t.Fatalf("toolshed still running %v after the signal", limit)
		return 0
	}
}

// waitStderr waits up to limit for toolshed's stderr to match re.
func (p *signalledProc) waitStderr(t *testing.T, re *regexp.Regexp, limit time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if m := re.FindStringSubmatch(p.stderr.String()); m != nil {
			return m
		}
		select {
		case <-p.exited:
			t.Fatalf("toolshed exited (status %d) before its stderr matched %s", p.code, re)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolshed's stderr did not match %s within %v", re, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// send writes one JSON-RPC message to toolshed's stdin.
func (p *signalledProc) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, msg+"\n"); err != nil {
		t.Fatalf("writing to toolshed: %v", err)
	}
}

// expect reads toolshed's stdout until a message for which match is true, for up to
// limit, and returns it.
func (p *signalledProc) expect(t *testing.T, what string, limit time.Duration, match func(msg []byte) bool) []byte {
	t.Helper()
	return expectMessage(t, p.lines, what, limit, match)
}

// expectMessage reads messages until one for which match is true, for up to limit, and
// returns it.
func expectMessage(t *testing.T, messages <-chan []byte, what string, limit time.Duration, match func(msg []byte) bool) []byte {
	t.Helper()
	timeout := time.After(limit)
	for {
		select {
		case b, ok := <-messages:
			if !ok {
				t.Fatalf("the messages from toolshed ended before %s", what)
			}
			if match(b) {
				return b
			}
		case <-timeout:
			t.Fatalf("no %s from toolshed within %v", what, limit)
		}
	}
}

// stdioSession initializes an MCP session over toolshed's stdio with the given client
// capabilities, and returns once tools/list lists tool (the upstreams start after the
// client has initialized).
func (p *signalledProc) stdioSession(t *testing.T, capabilities, tool string) {
	t.Helper()
	p.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+capabilities+`,"clientInfo":{"name":"shutdown-test","version":"1"}}}`)
	p.expect(t, "initialize result", time.Minute, func(b []byte) bool { _, ok := resultOfID(b, `"init"`); return ok })
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; ; i++ {
		id := fmt.Sprintf(`"list-%d"`, i)
		p.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`)
		res := p.expect(t, "tools/list result", time.Minute, func(b []byte) bool { _, ok := resultOfID(b, id); return ok })
		if bytes.Contains(res, []byte(`"name":"`+tool+`"`)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools/list never listed %s: %s", tool, res)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// resultOfID is resultOf for any id, given as its JSON.
func resultOfID(msg []byte, id string) (json.RawMessage, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(msg, &m) != nil || string(m.ID) != id {
		return nil, false
	}
	if m.Error != nil {
		return m.Error, true
	}
	return m.Result, true
}

// recordedEverything writes a toolshed config whose only server, "everything", is the
// npm server-everything started through a shell that copies its stdin to a file: the
// file holds every message toolshed wrote to the server (notifications/cancelled
// among them), and the server is a grandchild of the process toolshed starts, as it
// is when npx starts it (npx, then node running the server). The server's processes
// carry a marker of the test's own (see markedProcesses), found whatever toolshed did
// with them. It returns the config, the file, and the marker.
func recordedEverything(t *testing.T) (config, stdinLog, marker string) {
	t.Helper()
	node, args := testupstream.Everything(t)
	stdinLog = filepath.Join(t.TempDir(), "everything-stdin.jsonl")
	marker = fmt.Sprintf("%s-%d-%d", regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"), os.Getpid(), time.Now().UnixNano())
	config = writeConfigFile(t, map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{
			"command": "sh",
			"args":    append([]string{"-c", `tee -a "$0" | "$@"`, stdinLog, node}, args...),
			"env":     map[string]string{markerEnv: marker},
		},
	}})
	t.Cleanup(func() {
		// Whatever the test found, leave nothing running.
		for pid := range markedProcesses(marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return config, stdinLog, marker
}

// upstreamCancelled reports whether the server's stdin (see recordedEverything) has a
// notifications/cancelled for the tools/call of tool, and returns what it has.
func upstreamCancelled(t *testing.T, stdinLog, tool string) (bool, string) {
	t.Helper()
	data, err := os.ReadFile(stdinLog)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var callID json.RawMessage
	cancelled := map[string]bool{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch {
		case m.Method == "tools/call" && m.Params.Name == tool:
			callID = m.ID
		case m.Method == "notifications/cancelled":
			cancelled[string(m.Params.RequestID)] = true
		}
	}
	return callID != nil && cancelled[string(callID)], string(data)
}
