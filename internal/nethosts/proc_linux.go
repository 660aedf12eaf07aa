package nethosts

import "syscall"

// sysProcAttr kills a program started in a host when the test process
// dies. `ip netns exec` execs the program (no fork), and the parent-death
// signal survives exec for binaries that are not set-user-ID, so it reaches
// the program itself.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
