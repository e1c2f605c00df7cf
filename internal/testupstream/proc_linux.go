package testupstream

import "syscall"

// setDeathSignal has the kernel send the process SIGTERM (graceful) or SIGKILL when its
// parent, the test binary, dies: a cleanup that never runs cannot stop it.
//
// The signal goes when the thread that started the process exits; the Go runtime
// keeps its threads for the life of the process but for those of goroutines that end
// locked to them (runtime.LockOSThread), which no test that starts processes does.
func setDeathSignal(a *syscall.SysProcAttr, graceful bool) {
	a.Pdeathsig = syscall.SIGKILL
	if graceful {
		a.Pdeathsig = syscall.SIGTERM
	}
}
