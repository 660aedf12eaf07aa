package devserver

import "syscall"

// sysProcAttr makes the kernel kill the server when the process that
// started it dies, so a test binary killed by a timeout leaves no server
// behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
