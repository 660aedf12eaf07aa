package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Runner runs one Slurm command with argv, never through a shell, and
// returns its standard output.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// EnvRunner is a Runner that can add variables to one command's
// environment: sbatch's, which the job inherits (its default --export=ALL),
// so a secret the agent needs (TEMPORAL_API_KEY) never is on an argv.
type EnvRunner interface {
	Runner
	RunEnv(ctx context.Context, env []string, name string, args ...string) ([]byte, error)
}

// ExecRunner runs the commands on this machine. Env is added to the
// process's environment (SLURM_CONF, for a cluster of tests).
type ExecRunner struct {
	Env []string
	// Timeout bounds each command (default DefaultCommandTimeout): with
	// slurmctld down, every command retries for seconds before it fails.
	Timeout time.Duration
}

// DefaultCommandTimeout is ExecRunner.Timeout's default.
const DefaultCommandTimeout = time.Minute

// CommandError is a Slurm command that failed: its argv, exit and the
// last of what it wrote on stderr. Some commands say why on stdout
// (`scontrol show partition NOPE` prints "Partition NOPE not found" there
// and exits 1): Stdout holds the last of it when stderr was empty.
type CommandError struct {
	Argv   []string
	Stderr string
	Stdout string
	Err    error
}

func (e *CommandError) Error() string {
	msg := strings.Join(e.Argv, " ") + ": " + e.Err.Error()
	switch {
	case e.Stderr != "":
		msg += ": " + e.Stderr
	case e.Stdout != "":
		msg += ": " + e.Stdout
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return r.RunEnv(ctx, nil, name, args...)
}

// RunEnv implements EnvRunner: env is added to the process's and Env.
// The command runs in a process group of its own, so that a Ctrl-C at the
// terminal, meant for the worker, does not kill the scancel with which
// the worker is cancelling its pilots.
func (r ExecRunner) RunEnv(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if len(r.Env) > 0 || len(env) > 0 {
		cmd.Env = append(append(os.Environ(), r.Env...), env...)
	}
	ownProcessGroup(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			err = fmt.Errorf("%w (is Slurm's client installed and on PATH?)", err)
		}
		cerr := &CommandError{Argv: append([]string{name}, args...), Stderr: lastLines(stderr.String(), 5), Err: err}
		if cerr.Stderr == "" {
			cerr.Stdout = lastLines(stdout.String(), 5)
		}
		return stdout.Bytes(), cerr
	}
	return stdout.Bytes(), nil
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "; ")
}
