package devserver

import "syscall"

// sysProcAttr makes the kernel kill the server when the process that
// started it dies, so a test binary killed by a timeout leaves no server
// behind; and puts the server in its own process group, so a Ctrl-C at the
// terminal reaches only gleaner, which stops its trainers (their last
// progress still needs the server) before it stops the server.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
