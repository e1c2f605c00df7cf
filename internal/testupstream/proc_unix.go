//go:build unix

package testupstream

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts cmd in a process group of its own, sent SIGTERM (graceful) or
// SIGKILL when the test binary dies (Linux), and makes its context's cancel kill the
// whole group.
func ownProcessGroup(cmd *exec.Cmd, graceful bool) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr, graceful)
	if cmd.Cancel != nil { // made by exec.CommandContext
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	}
}

// killProcessGroup ends whatever cmd's process group left behind.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
