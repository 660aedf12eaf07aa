package slurmdemo

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a child process the demo started (the worker): its output
// goes to a log file, and Stop ends it with SIGTERM, then SIGKILL.
type Process struct {
	Name string
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess starts argv with env added, its output appended to log.
// It runs in a process group of its own, so a Ctrl-C at the terminal
// reaches only the demo, which stops it in order.
func StartProcess(name string, argv, env []string, log string) (*Process, error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: log: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Process{Name: name, Log: log, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM and waits up to timeout, then SIGKILLs its group.
// A process that exited by itself returns its exit error.
func (p *Process) Stop(timeout time.Duration) error {
	if done, err := p.Exited(); done {
		return err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		var ee *exec.ExitError
		if errors.As(p.err, &ee) && ee.ExitCode() == -1 {
			return nil // ended by our SIGTERM
		}
		return p.err
	case <-t.C:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %v of SIGTERM: killed (its log: %s)", p.Name, timeout, p.Log)
	}
}
