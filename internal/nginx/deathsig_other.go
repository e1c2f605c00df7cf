//go:build !linux

package nginx

import "syscall"

// setDeathSignal does nothing where os/exec has no parent-death signal.
func setDeathSignal(*syscall.SysProcAttr) {}
