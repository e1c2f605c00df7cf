//go:build !unix

package testupstream

import "os/exec"

func ownProcessGroup(*exec.Cmd, bool) {}

func killProcessGroup(*exec.Cmd) {}
