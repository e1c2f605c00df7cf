//go:build e2e && linux

package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// How toolshed serve stops on SIGTERM, run as a user runs it, in front of the real npm
// server-everything (see recordedEverything), over stdio and Streamable HTTP.
//
// The time bounds are behaviour, not speed: a call in flight lasts 60 seconds and the
// drain timeout is 2 seconds, so a toolshed that waits for the call, or for a client
// that never answers, cannot pass, while a loaded 2-core machine has ample room.

const (
	longTool     = "everything__trigger-long-running-operation"
	samplingTool = "everything__trigger-sampling-request"
	// stopBound is the most a stop with a 2-second drain timeout may take here.
	stopBound = 20 * time.Second
)

// serveArgs are toolshed serve's arguments for the shutdown tests: every tool listed
// under its own name, a drain timeout of drain.
func serveArgs(config, drain string) []string {
	return []string{"serve", "--config", config, "--tool-search", "off", "--drain-timeout", drain}
}

// callMessage is a tools/call of tool with id and a progress token, so that progress
// shows that the upstream is running it.
func callMessage(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"_meta":{"progressToken":"` + id + `-progress"},"name":"` + tool + `","arguments":` + args + `}}`
}

// longCall lasts a minute, with progress every second.
const longCallArgs = `{"duration":60,"steps":60}`

func isProgress(b []byte) bool { return bytes.Contains(b, []byte(`"method":"notifications/progress"`)) }

func isSamplingRequest(b []byte) bool {
	return bytes.Contains(b, []byte(`"method":"sampling/createMessage"`))
}

// startHTTPFront runs serve over Streamable HTTP on a free port, and returns it with a
// client in an initialized session once the upstream is ready.
func startHTTPFront(t *testing.T, config, drain, capabilities string) (*signalledProc, *httpWire) {
	t.Helper()
	p := startSignalled(t, false, nil, append(serveArgs(config, drain), "--http", "127.0.0.1:0")...)
	url := p.waitStderr(t, regexp.MustCompile(`at (http://\S+/mcp) `), 2*time.Minute)[1]
	p.waitStderr(t, regexp.MustCompile(` servers ready, `), 2*time.Minute)
	c := &httpWire{url: url}
	c.call(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":`+capabilities+`,"clientInfo":{"name":"shutdown-test","version":"1"}}`)
	c.notify(t, "notifications/initialized")
	return p, c
}

// sseMessages passes on the data of each server-sent event of body, until it ends.
func sseMessages(body io.ReadCloser) <-chan []byte {
	out := make(chan []byte, 1024)
	go func() {
		defer close(out)
		r := bufio.NewReader(body)
		for {
			line, err := r.ReadString('\n')
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
				out <- []byte(d)
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// checkStopped checks a stop after one SIGTERM sent at sent: toolshed exited 0 within
// stopBound, it told the upstream that the call of tool was cancelled, and left none of
// the upstream's processes running.
func checkStopped(t *testing.T, p *signalledProc, sent time.Time, stdinLog, marker, tool string) {
	t.Helper()
	code := p.waitExit(t, stopBound)
	t.Logf("exited with status %d, %v after SIGTERM", code, p.at.Sub(sent).Round(time.Millisecond))
	if code != 0 {
		t.Errorf("exit status %d after a clean stop, want 0", code)
	}
	if ok, wire := upstreamCancelled(t, stdinLog, tool); !ok {
		t.Errorf("the upstream was not sent notifications/cancelled for its tools/call of %s; it got:\n%s", tool, wire)
	}
	checkNoMarkedProcesses(t, marker, "after toolshed exited")
}

// One SIGTERM with a one-minute call in flight: toolshed cancels the call (the upstream
// gets notifications/cancelled; an HTTP client gets a result saying why), stops the
// server, and exits 0 within the drain timeout.
func TestServeSIGTERMCancelsCallInFlight(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		config, stdinLog, marker := recordedEverything(t)
		p := startSignalled(t, true, nil, serveArgs(config, "2s")...)
		p.stdioSession(t, `{}`, longTool)
		p.send(t, callMessage("long", longTool, longCallArgs))
		p.expect(t, "progress of the long call", time.Minute, isProgress)
		sent := p.signal(t, syscall.SIGTERM)
		checkStopped(t, p, sent, stdinLog, marker, "trigger-long-running-operation")
	})
	t.Run("http", func(t *testing.T) {
		config, stdinLog, marker := recordedEverything(t)
		p, c := startHTTPFront(t, config, "2s", `{}`)
		resp := c.post(t, callMessage("long", longTool, longCallArgs))
		defer resp.Body.Close()
		events := sseMessages(resp.Body)
		expectMessage(t, events, "progress of the long call", time.Minute, isProgress)
		sent := p.signal(t, syscall.SIGTERM)
		res := expectMessage(t, events, "result of the long call", stopBound, func(b []byte) bool { _, ok := resultOfID(b, `"long"`); return ok })
		if !bytes.Contains(res, []byte(`"isError":true`)) || !bytes.Contains(res, []byte("shutting down")) {
			t.Errorf("the call's result does not say it was cancelled because toolshed is shutting down: %s", res)
		}
		checkStopped(t, p, sent, stdinLog, marker, "trigger-long-running-operation")
	})
}

// A call whose upstream asked the client for sampling, and the client is gone (stuck:
// it never answers, and its end of stdin stays open): SIGTERM still stops toolshed.
func TestServeSIGTERMWithSamplingClientGone(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		config, stdinLog, marker := recordedEverything(t)
		p := startSignalled(t, true, nil, serveArgs(config, "2s")...)
		p.stdioSession(t, `{"sampling":{}}`, samplingTool)
		p.send(t, callMessage("sample", samplingTool, `{"prompt":"hello"}`))
		p.expect(t, "the relayed sampling request", time.Minute, isSamplingRequest)
		sent := p.signal(t, syscall.SIGTERM)
		checkStopped(t, p, sent, stdinLog, marker, "trigger-sampling-request")
	})
	// Over HTTP a client that goes away closes its response stream, which cancels
	// the call before any signal: there is nothing left for the stop to wait for.
}

// A second SIGTERM while toolshed stops exits at once, with status 143 (128 + SIGTERM),
// and still leaves none of the upstream server's processes running: the server is
// started through a shell, so its process group must be killed, not only the shell.
// The server is busy with a call that writes nothing for a minute (no progress token),
// so that an orphan lives on: writing to a toolshed that is gone would end it.
func TestServeSecondSignalLeavesNoOrphans(t *testing.T) {
	config, stdinLog, marker := recordedEverything(t)
	// A long drain: only the second signal can make the stop quick.
	p := startSignalled(t, true, nil, serveArgs(config, "120s")...)
	p.stdioSession(t, `{}`, longTool)
	p.send(t, `{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"`+longTool+`","arguments":`+longCallArgs+`}}`)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(readFile(t, stdinLog), `"method":"tools/call"`) {
		if time.Now().After(deadline) {
			t.Fatal("the call never reached the upstream server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(markedProcesses(marker)) == 0 {
		t.Fatal("found no process of the upstream server while it runs a call: the marker does not work")
	}
	p.signal(t, syscall.SIGTERM)
	// Wait until toolshed has taken the first signal, so that the second is not merged
	// into it; a toolshed that does not say so gets the second signal a second later.
	deadline = time.Now().Add(time.Second)
	for !strings.Contains(p.stderr.String(), "signal again") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	sent := p.signal(t, syscall.SIGTERM)
	code := p.waitExit(t, stopBound)
	t.Logf("exited with status %d, %v after the second SIGTERM", code, p.at.Sub(sent).Round(time.Millisecond))
	if code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit status %d after a second SIGTERM, want %d", code, 128+int(syscall.SIGTERM))
	}
	checkNoMarkedProcesses(t, marker, "after toolshed exited")
}

// readFile is the content of path, empty while it does not exist.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}
