package nginx

import "syscall"

// setDeathSignal has the kernel send nginx SIGTERM, its fast stop, which ends its
// workers too, when the process that started it dies: a test binary killed by go
// test's -timeout never calls Stop, and workers whose master was killed outright
// would go on serving.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
