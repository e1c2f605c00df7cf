//go:build unix

package gateway

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts the child in a process group of its own, so that toolshed can
// end the whole tree it starts (npx, a shell, the server itself) and not leave orphans.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup ends what is left of the child's process group.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// terminateProcessGroup asks the child's whole process group to stop (SIGTERM): the
// child may be a shell or launcher that does not pass the signal on to the server.
func terminateProcessGroup(cmd *exec.Cmd) error {
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
}
