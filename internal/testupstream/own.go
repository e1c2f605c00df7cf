package testupstream

import (
	"os/exec"
	"testing"
)

// Own makes cmd, which the test has yet to start, a process the test owns to its end,
// so that it cannot outlive the test run however the run ends:
//
//   - it runs in a process group of its own, with what it starts in turn (unless that
//     makes a group of its own, as toolshed does for its upstream servers);
//   - on Linux it is sent SIGKILL when the test binary dies, even when go test's
//     -timeout or a signal kills the binary without running a single cleanup;
//   - at the end of the test, after the cleanups registered after this call (the
//     test's own, graceful, stop) have run, whatever is left of its group is killed;
//   - a cmd made with exec.CommandContext is cancelled by killing its whole group.
//
// cmd.SysProcAttr, when set, is kept and added to.
func Own(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	own(t, cmd, false)
}

// OwnGraceful is Own for a process that must stop what it started itself: when the
// test binary dies it is sent SIGTERM rather than SIGKILL. toolshed then stops its
// upstream servers (each in a process group of its own, which killing toolshed's group
// does not reach), buildah what it runs, nginx its workers.
func OwnGraceful(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	own(t, cmd, true)
}

func own(t testing.TB, cmd *exec.Cmd, graceful bool) {
	t.Helper()
	if cmd.Process != nil {
		t.Fatalf("testupstream.Own: %s has been started already", cmd.Path)
	}
	ownProcessGroup(cmd, graceful)
	t.Cleanup(func() { killProcessGroup(cmd) })
}
