//go:build linux

package testupstream_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// ownHelperEnv, when set to a directory, makes TestOwnedDieWithTestBinary the test
// binary that it kills (see ownHelper).
const ownHelperEnv = "TESTUPSTREAM_OWN_HELPER"

// ownHelper is TestOwnedDieWithTestBinary in the test binary that it runs and kills:
// it starts a process with Own (sleep, which SIGKILL ends) and one with OwnGraceful (a
// shell that writes down the SIGTERM it gets), writes their pids to dir, and waits to
// be killed, as a test binary that go test's -timeout ends, which runs no cleanup.
func ownHelper(t *testing.T, dir string) {
	hard := exec.Command("sleep", "3600")
	testupstream.Own(t, hard)
	graceful := exec.Command("sh", "-c", `sleep 3600 & child=$!; trap 'kill $child; echo stopped >"$0"; exit 0' TERM; echo trapped >"$0"; wait`, filepath.Join(dir, "graceful"))
	testupstream.OwnGraceful(t, graceful)
	for _, c := range []*exec.Cmd{hard, graceful} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pids"), fmt.Appendf(nil, "%d %d", hard.Process.Pid, graceful.Process.Pid), 0o644); err != nil {
		t.Fatal(err)
	}
	select {}
}

// TestOwnedDieWithTestBinary: the processes a test owns die with the test binary when
// it is killed without running a single cleanup, the one owned gracefully by SIGTERM.
func TestOwnedDieWithTestBinary(t *testing.T) {
	if dir := os.Getenv(ownHelperEnv); dir != "" {
		ownHelper(t, dir)
	}
	t.Parallel()
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^TestOwnedDieWithTestBinary$", "-test.count=1")
	helper.Env = append(os.Environ(), ownHelperEnv+"="+dir)
	var out bytes.Buffer
	helper.Stdout, helper.Stderr = &out, &out
	testupstream.Own(t, helper)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { helper.Wait(); close(exited) }()

	// Once both processes run (and the shell has set its trap), kill the test binary.
	var pids []int
	waitFor(t, "the helper's processes to start", func() bool {
		select {
		case <-exited:
			t.Fatalf("the helper exited before it started its processes:\n%s", &out)
		default:
		}
		b, err := os.ReadFile(filepath.Join(dir, "pids"))
		if err != nil {
			return false
		}
		if _, err := os.Stat(filepath.Join(dir, "graceful")); err != nil {
			return false
		}
		pids = nil
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			pids = append(pids, pid)
		}
		return true
	})
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	waitFor(t, fmt.Sprintf("processes %v to die with the test binary", pids), func() bool {
		return !alive(pids[0]) && !alive(pids[1])
	})
	if b, _ := os.ReadFile(filepath.Join(dir, "graceful")); strings.TrimSpace(string(b)) != "stopped" {
		t.Errorf("the process owned gracefully wrote %q, want it to have stopped on SIGTERM", b)
	}
}

// TestOwnKillsGroupAtEnd: what an owned process started in its group is killed at the
// end of the test, though the process that started it is gone.
func TestOwnKillsGroupAtEnd(t *testing.T) {
	t.Parallel()
	var grandchild int
	t.Run("test", func(t *testing.T) {
		cmd := exec.Command("sh", "-c", "sleep 3600 >/dev/null 2>&1 & echo $!")
		testupstream.Own(t, cmd)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if grandchild, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
			t.Fatal(err)
		}
		if !alive(grandchild) {
			t.Fatalf("sleep %d is not running while the test runs", grandchild)
		}
	})
	waitFor(t, fmt.Sprintf("sleep %d to be killed at the end of the test", grandchild), func() bool { return !alive(grandchild) })
}

// alive reports whether pid is a running process (not a zombie that init has yet to
// reap).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || !bytes.HasPrefix(stat[i+1:], []byte(" Z"))
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
