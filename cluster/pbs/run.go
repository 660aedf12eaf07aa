package pbs

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Runner runs one PBS command with argv, never through a shell, env
// ("NAME=value") added to its environment, and returns its standard
// output.
type Runner interface {
	Run(ctx context.Context, env []string, name string, args ...string) ([]byte, error)
}

// ExecRunner runs PBS's commands on this machine.
type ExecRunner struct {
	// Bin is the folder of PBS's commands ($PBS_EXEC/bin; default: PATH).
	Bin string
	// Env is added to the process's environment (PBS_CONF_FILE, say).
	Env []string
	// Timeout bounds each command (default one minute): with the server
	// down, a command retries before it fails.
	Timeout time.Duration
}

// CommandError is a PBS command that failed: its argv, how it ended and
// what PBS said on stderr (its last lines).
type CommandError struct {
	Argv   []string
	Stderr string
	Err    error
}

func (e *CommandError) Error() string {
	var b strings.Builder
	b.WriteString(strings.Join(e.Argv, " "))
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Stderr != "" {
		b.WriteString(": ")
		b.WriteString(e.Stderr)
	}
	return b.String()
}

func (e *CommandError) Unwrap() error { return e.Err }

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	if r.Timeout <= 0 {
		r.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	path := name
	if r.Bin != "" {
		path = filepath.Join(r.Bin, name)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	if len(r.Env)+len(env) > 0 {
		cmd.Env = slices.Concat(os.Environ(), r.Env, env)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		err = errors.Join(err, errors.New("is PBS's client installed, its bin folder on PATH? (docs/pbs.md)"))
	}
	// PBS's words: stderr, or stdout where a command (qmgr) says it there.
	said := strings.Split(strings.TrimSpace(cmp.Or(stderr.String(), stdout.String())), "\n")
	return stdout.Bytes(), &CommandError{Argv: append([]string{name}, args...), Stderr: strings.Join(said[max(0, len(said)-5):], "; "), Err: err}
}

// gone reports whether err is qdel's or qsig's complaint about jobs that
// have already ended (or never were): nothing left to do for them.
func gone(err error) bool {
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Stderr == "" {
		return false
	}
	for _, line := range strings.Split(ce.Stderr, "; ") {
		if !strings.Contains(line, "Unknown Job Id") && !strings.Contains(line, "Job has finished") &&
			!strings.Contains(line, "Request invalid for state of job") {
			return false
		}
	}
	return true
}
