package integration_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// binDir holds the gleaner binary built once per test binary run.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gleaner-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := testenv.Run(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// gleanerBinary builds ./cmd/gleaner from this checkout once and returns
// its path.
func gleanerBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("go not on PATH: %w", err)
			return
		}
		buildPath = filepath.Join(binDir, "gleaner")
		cmd := exec.Command(goBin, "build", "-o", buildPath, "github.com/gleaner-hpc/gleaner/cmd/gleaner")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/gleaner: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// startServer starts a dev server for t (skipping without the temporal
// CLI unless GLEANER_REQUIRE_TEMPORAL=1). Set opts.DBFile to Restart it on
// the same database.
func startServer(t testing.TB, opts devserver.Options) *devserver.Server {
	t.Helper()
	return testenv.DevServer(t, opts)
}

// testContext is a context that ends at d from now or at t's deadline,
// whichever comes first.
func testContext(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	deadline := time.Now().Add(d)
	if tt, ok := t.(*testing.T); ok {
		if td, ok := tt.Deadline(); ok && td.Add(-10*time.Second).Before(deadline) {
			deadline = td.Add(-10 * time.Second)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every 100 ms until it reports true, failing t when
// timeout passes first (with what, and cond's last error).
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	if err := waitUntil(testContext(t, timeout), cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitUntil polls cond every 100 ms until it reports true or ctx ends.
func waitUntil(ctx context.Context, cond func() (bool, error)) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := cond()
		if ok && err == nil {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// WorkerProcessOptions configure a `gleaner worker` subprocess.
type WorkerProcessOptions struct {
	TaskQueue string // default "gleaner"
	Nodes     string // --nodes; default "static:4,gpus=none" (CPU slots, on any host)
	DataDir   string // default a temp dir; kept across Restart
	Args      []string
	Env       []string // KEY=VALUE added to a clean environment
	// Agent, when set, makes the process `gleaner agent` with these
	// arguments (after the connection flags) instead of a worker; Start
	// waits until it has joined its pool (its queue is its start's own).
	Agent []string
	// Wrap runs the process through a command, e.g. `ip netns exec NS`
	// (which execs it: the pid stays the process's).
	Wrap []string
	// Address is the server's address as the process reaches it
	// (default srv.Address()).
	Address string
}

// WorkerProcess is a `gleaner worker` subprocess that a test can SIGKILL
// and restart, as an operator's crash would.
type WorkerProcess struct {
	t       testing.TB
	srv     *devserver.Server
	bin     string
	args    []string
	env     []string
	logPath string
	opts    WorkerProcessOptions

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	runs int
}

// startWorkerProcess builds gleaner (once), starts `gleaner worker`
// against srv and waits until it polls its task queue. The process is
// killed when t ends; its output is logged if t failed.
func startWorkerProcess(t testing.TB, srv *devserver.Server, opts WorkerProcessOptions) *WorkerProcess {
	t.Helper()
	if opts.TaskQueue == "" {
		opts.TaskQueue = "gleaner"
	}
	if opts.Nodes == "" {
		opts.Nodes = "static:4,gpus=none"
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(t.TempDir(), "data")
	}
	if opts.Address == "" {
		opts.Address = srv.Address()
	}
	p := &WorkerProcess{
		t:       t,
		srv:     srv,
		bin:     gleanerBinary(t),
		logPath: filepath.Join(t.TempDir(), "worker.log"),
		opts:    opts,
		args: append([]string{"worker",
			"--address", opts.Address,
			"--namespace", srv.Namespace(),
			"--task-queue", opts.TaskQueue,
			"--nodes", opts.Nodes,
			"--data-dir", opts.DataDir,
			"--stop-timeout", "5s",
			"--log-level", "warn",
		}, opts.Args...),
		env: append(cleanEnv(), opts.Env...),
	}
	if opts.Agent != nil {
		p.args = append([]string{"agent",
			"--address", opts.Address,
			"--namespace", srv.Namespace(),
			"--task-queue", opts.TaskQueue,
			"--data-dir", opts.DataDir,
		}, opts.Agent...)
	}
	if len(opts.Wrap) > 0 {
		p.args = append(append(slices.Clone(opts.Wrap[1:]), p.bin), p.args...)
		p.bin = opts.Wrap[0]
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("gleaner worker output (%s):\n%s", p.logPath, p.Log())
		}
	})
	p.Start()
	return p
}

// cleanEnv is the test's environment without the variables that would
// configure the worker behind the test's back.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TEMPORAL_") || strings.HasPrefix(kv, "GLEANER_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Start starts the process (again, after Kill or Stop) and waits until it
// polls the task queue.
func (p *WorkerProcess) Start() {
	p.t.Helper()
	p.mu.Lock()
	if p.running() {
		p.mu.Unlock()
		p.t.Fatal("WorkerProcess.Start: already running")
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.mu.Unlock()
		p.t.Fatal(err)
	}
	p.runs++
	fmt.Fprintf(logf, "=== run %d: %s %s\n", p.runs, p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = workerProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		p.mu.Unlock()
		p.t.Fatalf("starting gleaner worker: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	p.WaitPolling(2 * time.Minute)
}

func (p *WorkerProcess) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// PID is the current process's id (0 before Start).
func (p *WorkerProcess) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited reports whether the current process has exited.
func (p *WorkerProcess) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.running()
}

// WaitPolling waits until the current process polls the task queue for
// workflow and activity tasks (pollers are told apart by the pid in their
// identity, since a killed worker's polls linger on the server).
func (p *WorkerProcess) WaitPolling(timeout time.Duration) {
	p.t.Helper()
	pid, done := p.PID(), p.doneChan()
	ctx, cancel := context.WithCancel(testContext(p.t, timeout))
	defer cancel()
	go func() {
		select {
		case <-done: // it died: stop waiting
			cancel()
		case <-ctx.Done():
		}
	}()
	prefix := strconv.Itoa(pid) + "@"
	var err error
	if p.opts.Agent != nil {
		// It polls its queue before it joins, and says when it has joined.
		runs := p.runs
		err = waitUntil(ctx, func() (bool, error) {
			log := p.Log()
			i := strings.LastIndex(log, fmt.Sprintf("=== run %d:", runs))
			return i >= 0 && strings.Contains(log[i:], ": joined pool "), nil
		})
	} else {
		_, err = p.srv.WaitForPoller(ctx, p.opts.TaskQueue, func(id string) bool { return strings.HasPrefix(id, prefix) })
	}
	if err != nil {
		if p.Exited() {
			err = errors.New("the worker process exited")
		}
		p.t.Fatalf("gleaner worker (pid %d) is not polling task queue %s: %v\n%s", pid, p.opts.TaskQueue, err, p.Log())
	}
}

func (p *WorkerProcess) doneChan() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Kill SIGKILLs the process and waits for it to exit.
func (p *WorkerProcess) Kill() { p.signal(syscall.SIGKILL, 0) }

// Stop sends SIGTERM and waits for a graceful exit, SIGKILLing after
// timeout (failing t then).
func (p *WorkerProcess) Stop(timeout time.Duration) { p.signal(syscall.SIGTERM, timeout) }

func (p *WorkerProcess) signal(sig syscall.Signal, timeout time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	if timeout <= 0 {
		<-p.done
		return
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Errorf("gleaner worker did not exit within %v of %v; killed", timeout, sig)
	}
}

// Restart kills the process (SIGKILL) and starts it again with the same
// arguments and data directory, waiting until it polls.
func (p *WorkerProcess) Restart() {
	p.t.Helper()
	p.Kill()
	p.Start()
}

// ExitCode is the exit code of the last process once it has exited.
func (p *WorkerProcess) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Log is everything the process (all runs) printed so far.
func (p *WorkerProcess) Log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// DataDir is the worker's --data-dir.
func (p *WorkerProcess) DataDir() string { return p.opts.DataDir }
