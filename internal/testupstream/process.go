package testupstream

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Start runs cmd (toolshed serve or proxy, most often) until the test ends, with its
// stderr in the returned buffer, and returns once ready accepts the stderr so far (at
// most two minutes). At the end of the test it stops cmd with SIGINT, fails the test if
// cmd takes more than 15 seconds to stop, and logs its stderr if the test failed. cmd is
// owned by the test (OwnGraceful): it dies with the test binary whatever happens.
func Start(t testing.TB, cmd *exec.Cmd, ready func(stderr string) bool) *SyncBuffer {
	t.Helper()
	OwnGraceful(t, cmd)
	name := filepath.Base(cmd.Path)
	if len(cmd.Args) > 1 {
		name += " " + cmd.Args[1]
	}
	stderr := &SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("testupstream: starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s did not stop within 15s of SIGINT", name)
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, stderr.String())
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for !ready(stderr.String()) {
		select {
		case <-done:
			t.Fatalf("%s exited before it was ready:\n%s", name, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not come up within 2 minutes:\n%s", name, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return stderr
}

// ServersReady reports whether toolshed serve's stderr has its summary line, printed
// once every upstream server has started or failed.
func ServersReady(stderr string) bool { return strings.Contains(stderr, " servers ready, ") }

// RealPath is dir with its symbolic links resolved, as server-filesystem reports its
// allowed directories.
func RealPath(t testing.TB, dir string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatalf("testupstream: %v", err)
	}
	return p
}
