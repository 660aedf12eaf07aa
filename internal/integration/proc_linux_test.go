package integration_test

import "syscall"

// workerProcAttr kills a worker process when the test binary dies.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
