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
