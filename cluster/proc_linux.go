package cluster

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// Pdeathsig is delivered when the *thread* that forked the child exits,
// not the process (golang/go#27505); the Go runtime ends a thread when a
// goroutine locked to it returns. Starting every trainer from one
// goroutine locked to its thread for the life of the process makes the
// signal mean "the worker died".
var (
	starts     = make(chan startRequest)
	startsOnce sync.Once
)

type startRequest struct {
	cmd *exec.Cmd
	err chan error
}

func startOnStableThread(cmd *exec.Cmd) error {
	startsOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range starts {
				r.err <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	starts <- startRequest{cmd: cmd, err: errc}
	return <-errc
}

const (
	pPID    = 1          // P_PID
	wNOWAIT = 0x01000000 // WNOWAIT
)

// waitExitedNoReap blocks until process pid has exited, leaving it a
// zombie for exec.Cmd.Wait to reap.
func waitExitedNoReap(pid int) error {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|wNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}
