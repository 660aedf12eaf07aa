package slurmdemo

import "syscall"

// sysProcAttr puts a child in its own process group and sends it SIGTERM
// if the demo dies, so the worker still cancels its pilots.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
