//go:build unix && !linux

package testupstream

import "syscall"

// setDeathSignal does nothing here: only Linux has a parent-death signal that os/exec
// sets (and FreeBSD, which these tests do not run on). The test's cleanup and the
// session that scripts/test.sh ends stop the process instead.
func setDeathSignal(*syscall.SysProcAttr, bool) {}
