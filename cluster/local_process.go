package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// LocalProcess is a trainer started by LocalLauncher.
type LocalProcess struct {
	cmd         *exec.Cmd
	pid         int // also the process group id
	report, log string
	done        chan struct{}
	exit        ExitStatus
	escalated   atomic.Bool
	mu          sync.Mutex // guards reaped against signalling a reused pid
	reaped      bool
	match       envMatch  // the run token
	cgroup      runCgroup // zero when the run has none
	leftovers   []int
	unkilled    []int // set before done is closed
}

var _ Process = (*LocalProcess)(nil)

// PID is the trainer's process id, which is also its process group id.
func (p *LocalProcess) PID() int { return p.pid }

// ReportFile is the path in GLEANER_REPORT_FILE.
func (p *LocalProcess) ReportFile() string { return p.report }

// LogFile holds the trainer's stdout and stderr.
func (p *LocalProcess) LogFile() string { return p.log }

// Cgroup is the run's cgroup v2 directory, "" when it has none (see
// LocalLauncher.Cgroup). It is removed once Done is closed.
func (p *LocalProcess) Cgroup() string { return p.cgroup.dir }

// LeftoversKilled are the pids, sorted, of the processes of earlier runs
// of the same trial that Launch killed before starting this one: nil
// unless a worker died or a run was launched twice.
func (p *LocalProcess) LeftoversKilled() []int { return p.leftovers }

// Unkilled waits for Done and returns the pids, sorted, of the run's
// processes still alive then, having resisted SIGKILL for 10 s
// (uninterruptible sleep: a hung file system, a GPU driver): nil almost
// always.
func (p *LocalProcess) Unkilled() []int {
	<-p.done
	return p.unkilled
}

// Done is closed once the trainer has exited and every process it
// started has been killed and is gone (or has resisted SIGKILL for 10 s):
// those of its group, of its cgroup, and those carrying its run token.
func (p *LocalProcess) Done() <-chan struct{} { return p.done }

// Exit waits for Done and returns how the trainer ended.
func (p *LocalProcess) Exit() ExitStatus {
	<-p.done
	return p.exit
}

// Stop sends SIGTERM to the trainer's process group and to every other
// process of the run (those of its cgroup, those carrying its run token),
// waits up to grace for the trainer to exit, then SIGKILLs the group and
// the cgroup (Killed = true). Once the trainer has exited, whatever it
// left is SIGKILLed (see Done). It returns once Done is closed; on an
// exited trainer it only returns the status. Safe to call concurrently and
// repeatedly.
func (p *LocalProcess) Stop(grace time.Duration) ExitStatus {
	select {
	case <-p.done:
		return p.exit
	default:
	}
	p.signalGroup(syscall.SIGTERM)
	p.terminateOthers()
	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-p.done:
			t.Stop()
			return p.exit
		case <-t.C:
		}
	}
	p.escalated.Store(true)
	p.signalGroup(syscall.SIGKILL)
	if p.cgroup.dir != "" {
		_ = p.cgroup.kill() // all at once; wait sweeps the rest
	}
	<-p.done
	return p.exit
}

// terminateOthers sends SIGTERM to the run's processes outside the
// trainer's group, which the group signal did not reach; those in it get
// one SIGTERM only.
func (p *LocalProcess) terminateOthers() {
	pids := scanRunProcs(procRoot, p.match, p.pid)
	if p.cgroup.dir != "" {
		pids = append(pids, p.cgroup.procs()...)
		slices.Sort(pids)
		pids = slices.Compact(pids)
	}
	fds, _ := signalProcs(pids, func(pid int) bool {
		if pg, ok := processGroup(pid); !ok || pg == p.pid {
			return false
		}
		return environMatches(pid, p.match) || (p.cgroup.dir != "" && p.cgroup.holds(pid))
	}, syscall.SIGTERM)
	for _, fd := range fds {
		syscall.Close(fd)
	}
}

// signalGroup signals the process group unless the leader has been reaped:
// until then its pid names the group and cannot be reused by the kernel.
func (p *LocalProcess) signalGroup(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		_ = syscall.Kill(-p.pid, sig)
	}
}

func (p *LocalProcess) wait() {
	// Wait for the leader to exit without reaping it, so its pid (the
	// group id) stays reserved while the rest of the group is killed.
	if err := waitExitedNoReap(p.pid); err == nil {
		p.signalGroup(syscall.SIGKILL) // children that outlive the trainer
	}
	p.killRemains()
	p.mu.Lock()
	liveLeaders.Delete(p.pid) // before the pid can be reused
	err := p.cmd.Wait()
	p.reaped = true
	p.mu.Unlock()
	p.exit = exitStatusOf(p.cmd.ProcessState, err)
	p.exit.Killed = p.escalated.Load()
	close(p.done)
}

// killRemains kills what the trainer left outside its group: the run's
// cgroup first (killed at once and removed), then every process carrying
// its run token, each waited for until gone. It gives up on a process
// that survives SIGKILL for sweepTimeout, Done must close, and records it
// in unkilled.
func (p *LocalProcess) killRemains() {
	deadline := time.Now().Add(sweepTimeout)
	if p.cgroup.dir != "" {
		// A cgroup left in place is reported by the processes still in it;
		// the error says nothing more.
		_, _ = p.cgroup.remove(deadline)
		p.unkilled = p.cgroup.procs()
	}
	_, alive := sweep(func() []int { return scanRunProcs(procRoot, p.match, p.pid) },
		func(pid int) bool { return environMatches(pid, p.match) }, deadline)
	p.unkilled = append(p.unkilled, alive...)
	slices.Sort(p.unkilled)
	p.unkilled = slices.Compact(p.unkilled)
}

func exitStatusOf(ps *os.ProcessState, err error) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: -1, Signal: fmt.Sprintf("wait: %v", err)}
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		return ExitStatus{Code: ps.ExitCode()}
	}
	if ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal().String()}
	}
	return ExitStatus{Code: ws.ExitStatus()}
}
