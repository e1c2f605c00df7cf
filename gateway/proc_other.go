//go:build !unix

package gateway

import (
	"os"
	"os/exec"
)

func ownProcessGroup(*exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

func terminateProcessGroup(cmd *exec.Cmd) error { return cmd.Process.Signal(os.Interrupt) }
