//go:build linux

package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// devBuild builds the gleaner command and the example trainer into dir.
func devBuild(t *testing.T, dir string) (gleanerBin, mlpBin string) {
	t.Helper()
	gleanerBin, mlpBin = filepath.Join(dir, "gleaner"), filepath.Join(dir, "go-mlp")
	for bin, pkg := range map[string]string{
		gleanerBin: "github.com/gleaner-hpc/gleaner/cmd/gleaner",
		mlpBin:     "github.com/gleaner-hpc/gleaner/examples/go-mlp",
	} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		require.NoError(t, err, "go build %s:\n%s", pkg, out)
	}
	return gleanerBin, mlpBin
}

// devSpec writes a small campaign spec (YAML) of go-mlp trials, each
// steps × step_ms long, and returns its path.
func devSpec(t *testing.T, dir, mlp string, trials, steps, stepMS int) string {
	t.Helper()
	spec := fmt.Sprintf(`name: dev-test
command: [%q]
space:
  - {name: lr, type: float, min: 0.05, max: 0.5, log: true}
  - {name: hidden, type: choice, choices: [8]}
  - {name: steps, type: choice, choices: [%d]}
  - {name: step_ms, type: choice, choices: [%d]}
  - {name: report_every, type: choice, choices: [5]}
  - {name: checkpoint_every, type: choice, choices: [10]}
objective: {metric: val_loss, mode: min}
budget: {max_trials: %d, max_concurrent: 2}
resources: {min_nodes: 1, max_nodes: 1}
trial: {grace_period: 5s, max_restarts: 3}
`, mlp, steps, stepMS, trials)
	path := filepath.Join(dir, "campaign.yaml")
	require.NoError(t, os.WriteFile(path, []byte(spec), 0o644))
	return path
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := devserver.FreePort("127.0.0.1")
	require.NoError(t, err)
	return p
}

// devProc is `gleaner dev` running in its own process group, as under a
// shell; its stdout arrives line by line on lines.
type devProc struct {
	cmd    *exec.Cmd
	lines  chan string
	mu     sync.Mutex
	stdout strings.Builder
	stderr bytes.Buffer
	done   chan error
}

func startDev(t *testing.T, bin, dir, cli string, args ...string) *devProc {
	t.Helper()
	p := &devProc{lines: make(chan string, 1024), done: make(chan error, 1)}
	if !slices.Contains(args, "--dashboard-port") {
		args = append(args, "--dashboard-port", "0") // tests run side by side
	}
	p.cmd = exec.Command(bin, append([]string{"dev"}, args...)...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), devserver.EnvCLI+"="+cli)
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		<-copied
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("gleaner dev stdout:\n%s\nstderr:\n%s", p.out(), p.errOut())
		}
	})
	return p
}

func (p *devProc) out() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

func (p *devProc) errOut() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait waits for the process to exit, up to timeout.
func (p *devProc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(timeout):
		t.Fatalf("gleaner dev still running after %v", timeout)
		return nil
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// `gleaner dev --exit-when-done` runs a small campaign to its end and
// prints the progress, the leaderboard and the web UI's address.
func TestDevRunsACampaignToItsEnd(t *testing.T) {
	cli := testenv.SkipIfNoCLI(t)
	bins := t.TempDir()
	bin, mlp := devBuild(t, bins)
	trace, err := filepath.Abs("../../cluster/testdata/replay-small.csv")
	require.NoError(t, err)
	for _, tc := range []struct{ name, nodes string }{
		{"static", "static:4,gpus=none"},
		// n1, n2 and n3 come and go during the first 4 s, then only n2 stays.
		{"replay", "replay:" + trace + ",slots=3,factor=10,gpus=none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			spec := devSpec(t, dir, mlp, 3, 40, 25) // 3 trials of ~1 s
			port, uiPort := freePort(t), freePort(t)
			p := startDev(t, bin, dir, cli, "--exit-when-done",
				"--port", strconv.Itoa(port), "--ui-port", strconv.Itoa(uiPort),
				"--db", filepath.Join(dir, "state", "temporal.db"), "--data-dir", filepath.Join(dir, "data"),
				"--nodes", tc.nodes, "--campaign", spec, "--interval", "500ms")
			require.NoError(t, p.wait(t, 3*time.Minute), "gleaner dev exits 0")

			out := p.out()
			ui := fmt.Sprintf("http://localhost:%d", uiPort)
			require.Contains(t, out, "Temporal web UI:  "+ui)
			require.Regexp(t, `trials 3/3 done`, out)
			require.Regexp(t, `campaign dev-test-\d{8}-\d{6} completed after .*: 3 completed, 0 stopped, 0 failed`, out)
			require.Contains(t, out, "leaderboard (top 3, lowest val_loss first)")
			require.Regexp(t, `(?m)^1 +t\d+ +[0-9.e-]+ +completed`, out)
			require.Regexp(t, `Temporal web UI: `+regexp.QuoteMeta(ui)+`\n  the campaign: +`+regexp.QuoteMeta(ui)+`/namespaces/default/workflows/gleaner-campaign-dev-test-`, out)
			require.Regexp(t, `GleanerCampaign = "dev-test-\d{8}-\d{6}"`, out)
			// Hints name this server, and its UI, which is not where the CLI
			// looks (the port + 1000).
			conn := devConnectionHint(fmt.Sprintf("127.0.0.1:%d", port), "default", ui)
			require.Contains(t, conn, fmt.Sprintf("--address 127.0.0.1:%d", port))
			require.Regexp(t, `follow it from another shell: gleaner status dev-test-\d{8}-\d{6} --watch`+regexp.QuoteMeta(conn)+`\n`, out)
			require.Contains(t, out, "gleaner dev: stopped")
			require.FileExists(t, filepath.Join(dir, "state", "temporal.db"), "--db keeps the state")
		})
	}
}

// Ctrl-C in the middle of a campaign stops the trainers, the worker and
// the dev server, and leaves no process behind.
func TestDevCtrlCStopsEverything(t *testing.T) {
	cli := testenv.SkipIfNoCLI(t)
	bin, mlp := devBuild(t, t.TempDir())
	dir := t.TempDir()
	spec := devSpec(t, dir, mlp, 4, 2000, 50) // trials of ~100 s: still running at Ctrl-C

	// Orphans of gleaner dev (a process it failed to stop) become this
	// process's children instead of init's, so that they can be found.
	setSubreaper(t)

	p := startDev(t, bin, dir, cli,
		"--port", strconv.Itoa(freePort(t)), "--ui-port", strconv.Itoa(freePort(t)),
		"--db", filepath.Join(dir, "temporal.db"), "--data-dir", filepath.Join(dir, "data"),
		"--nodes", "static:2,gpus=none", "--campaign", spec, "--interval", "500ms")
	pid := p.cmd.Process.Pid

	// Wait until the progress shows trials running on nodes and one of
	// them has reported its objective: its trainer runs.
	running := regexp.MustCompile(`trials 0/4 done, [12] running.*nodes \S+ 2 nodes, [12] in use.*best val_loss`)
	deadline := time.After(2 * time.Minute)
	for seen := false; !seen; {
		select {
		case line, ok := <-p.lines:
			require.True(t, ok, "gleaner dev ended before its trials ran")
			seen = running.MatchString(line)
		case <-deadline:
			t.Fatal("no trial running after 2 minutes")
		}
	}
	tree := descendants(pid)
	var trainers int
	for _, d := range tree {
		if d.comm == "go-mlp" {
			trainers++
		}
	}
	require.NotZero(t, trainers, "a trainer runs under gleaner dev: %v", tree)

	// Ctrl-C in a terminal signals the foreground process group.
	require.NoError(t, syscall.Kill(-pid, syscall.SIGINT))
	interrupted := time.Now()
	err := p.wait(t, time.Minute)
	require.NoError(t, err, "gleaner dev exits 0 after Ctrl-C")
	t.Logf("gleaner dev exited %v after SIGINT; its output:\n%s%s", time.Since(interrupted).Round(time.Millisecond), p.out(), p.errOut())

	out := p.out()
	require.Regexp(t, `stopping [12] running trainer\(s\)`, out)
	require.Contains(t, out, "gleaner dev: worker stopped")
	require.Contains(t, out, "gleaner dev: stopped")
	for _, d := range tree {
		require.False(t, d.alive(), "%s (pid %d) still runs after gleaner dev exited", d.comm, d.pid)
	}
	require.Empty(t, children(os.Getpid()), "orphans of gleaner dev")
	// The trainers were stopped, not killed: each wrote a checkpoint on SIGTERM.
	logs, _ := filepath.Glob(filepath.Join(dir, "data", "*", "*", "runs", "*", cluster.LogFileName))
	stopped := 0
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil && strings.Contains(string(b), "checkpoint written") {
			stopped++
		}
	}
	require.GreaterOrEqual(t, stopped, trainers, "trainers that checkpointed on SIGTERM (logs %v)", logs)
}

// A port in use is reported with flags to use instead, before anything
// starts.
func TestDevReportsATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	spec := devSpec(t, dir, "/bin/true", 1, 1, 0)
	var out, errOut bytes.Buffer
	err = Run([]string{"dev", "--port", strconv.Itoa(port), "--ui-port", "0", "--campaign", spec,
		"--nodes", "static:1,gpus=none", "--db", ""}, &out, &errOut)
	require.Error(t, err)
	require.Contains(t, err.Error(), fmt.Sprintf("--port %d (the dev server) on 127.0.0.1: already in use", port))
	require.Regexp(t, `gleaner dev --port \d+ --ui-port \d+`, err.Error())
	require.Empty(t, out.String(), "nothing started")
}

func TestDevRejectsBadFlags(t *testing.T) {
	dir := t.TempDir()
	spec := devSpec(t, dir, "/bin/true", 1, 1, 0)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "static:0"}, "--nodes"},
		{[]string{"--campaign", filepath.Join(dir, "none.yaml")}, "--campaign"},
		{[]string{"--port", "70000"}, "--port 70000"},
		{[]string{"--port", "7000", "--ui-port", "7000"}, "must differ"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--interval", "0s"}, "--interval"},
	} {
		args := append([]string{"dev", "--campaign", spec, "--nodes", "static:1,gpus=none"}, tc.args...)
		var out, errOut bytes.Buffer
		err := Run(args, &out, &errOut)
		require.Error(t, err, "%v", tc.args)
		require.Contains(t, err.Error(), tc.want, "%v", tc.args)
	}
}

func TestDevProgressLine(t *testing.T) {
	p := client.Progress{
		Status: workflows.CampaignStatus{
			State: workflows.CampaignRunning, CampaignCounts: workflows.CampaignCounts{Completed: 3, Failed: 1},
			Running: 2, MaxTrials: 20, Objective: "val_loss",
			Best: &workflows.LeaderboardEntry{Number: 2, Score: 0.08213},
		},
		Pool: &workflows.PoolStatus{PoolState: workflows.PoolState{
			Nodes:  []cluster.Node{{ID: cluster.SlotID(0)}, {ID: cluster.SlotID(1)}, {ID: cluster.SlotID(3)}},
			Trials: []workflows.PoolTrial{{Nodes: []string{cluster.SlotID(0), cluster.SlotID(1)}}},
		}},
	}
	got := devProgressLine(74*time.Second, p, 4)
	require.Equal(t, "  1:14 trials 4/20 done, 2 running, 1 failed | nodes ##.o 3 nodes, 2 in use | best val_loss 0.08213 (trial 2)", got)
	p.Pool = nil
	p.Status.Best = nil
	require.Contains(t, devProgressLine(0, p, 4), "nodes - (the pool is starting) | best -")
}

// proc is a process seen in /proc.
type proc struct {
	pid   int
	comm  string
	state string // R, S, Z, …
	start string // start time in clock ticks since boot: tells a reused pid apart
}

func (p proc) alive() bool {
	q, ok := readProc(p.pid)
	return ok && q.start == p.start && !q.zombie()
}

func (p proc) zombie() bool { return p.state == "Z" || p.state == "X" }

// readProc parses /proc/PID/stat: comm, state, ppid, start time.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	lo, hi := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if lo < 0 || hi < lo {
		return proc{}, false
	}
	f := strings.Fields(s[hi+1:]) // state ppid pgrp … (field 3 of stat is f[0])
	if len(f) < 20 {
		return proc{}, false
	}
	return proc{pid: pid, comm: s[lo+1 : hi], state: f[0], start: f[19]}, true
}

func ppidOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return -1
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

func allPIDs() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// children are the live processes whose parent is pid.
func children(pid int) []proc {
	var out []proc
	for _, q := range allPIDs() {
		if ppidOf(q) == pid {
			if p, ok := readProc(q); ok && !p.zombie() {
				out = append(out, p)
			}
		}
	}
	return out
}

// descendants are the processes under pid, at any depth.
func descendants(pid int) []proc {
	var out []proc
	for next := []int{pid}; len(next) > 0; {
		var more []int
		for _, c := range next {
			for _, p := range children(c) {
				out = append(out, p)
				more = append(more, p.pid)
			}
		}
		next = more
	}
	return out
}

// setSubreaper makes this process the reaper of orphans below it for the
// test, and kills any left at the end.
func setSubreaper(t *testing.T) {
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		t.Skipf("prctl(PR_SET_CHILD_SUBREAPER): %v", e)
	}
	t.Cleanup(func() {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0)
		for _, c := range children(os.Getpid()) {
			_ = syscall.Kill(c.pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(c.pid, &ws, 0, nil)
		}
	})
}

// Outside a checkout the defaults are built into the binary: the Summit
// trace, the demo's campaign with the example trainer (bin/go-mlp, which
// the worker runs as this binary's example-trainer subcommand); in a
// checkout the example's file. State lies under $XDG_STATE_HOME in both:
// the database where `make devserver` keeps it, the run data where
// `gleaner worker` does. Each run names the campaign anew, from its clock.
func TestDevDefaultsOutsideTheCheckout(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Chdir(t.TempDir())
	var out, errOut bytes.Buffer
	o := &devOptions{nodes: devDefaultReplay}
	require.NoError(t, o.defaultPaths(false, false))
	require.Equal(t, filepath.Join(state, "gleaner", "dev", "temporal.db"), o.db)
	require.Equal(t, filepath.Join(state, "gleaner", "data"), o.dataDir)
	d := newDevRun(o, &out, &errOut)
	d.now = func() time.Time { return time.Date(2026, 11, 24, 8, 30, 5, 0, time.UTC) }
	exe := filepath.Join(t.TempDir(), "gleaner")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	d.executable = func() (string, error) { return exe, nil }

	n, err := d.nodeSource(false)
	require.NoError(t, err)
	require.Equal(t, 8, devSlotCount(n))
	require.Empty(t, errOut.String())

	c, err := d.loadCampaign()
	require.NoError(t, err)
	require.Equal(t, "the built-in examples/go-mlp/campaign.yaml", c.from)
	require.Equal(t, "go-mlp-spirals-20261124-083005", c.spec.Name)
	// The spec keeps bin/go-mlp; the worker runs it with this binary.
	require.Equal(t, []string{"bin/go-mlp"}, c.spec.Command)
	require.Equal(t, exe, d.exe)

	// In a checkout: the example's file, and the same state directory.
	require.NoError(t, os.MkdirAll("examples/go-mlp", 0o755))
	require.NoError(t, os.WriteFile("examples/go-mlp/campaign.yaml", []byte("name: yaml-spec\ncommand: [bin/go-mlp]\n"+
		"space: [{name: lr, type: float, min: 0.01, max: 0.1}]\nobjective: {metric: val_loss}\nbudget: {max_trials: 2}\n"), 0o644))
	c, err = d.loadCampaign()
	require.NoError(t, err)
	require.Equal(t, "examples/go-mlp/campaign.yaml", c.from)
	require.Equal(t, "yaml-spec-20261124-083005", c.spec.Name)
	require.Equal(t, []string{"bin/go-mlp"}, c.spec.Command)
	o2 := &devOptions{db: "given.db"}
	require.NoError(t, o2.defaultPaths(true, false))
	require.Equal(t, "given.db", o2.db)
	require.Equal(t, filepath.Join(state, "gleaner", "data"), o2.dataDir)
	o3 := &devOptions{}
	require.NoError(t, o3.defaultPaths(false, false))
	require.Equal(t, filepath.Join(state, "gleaner", "dev", "temporal.db"), o3.db)

	// A trainer that is not there is reported before anything starts.
	require.NoError(t, os.WriteFile("other.yaml", []byte("name: other\ncommand: [bin/no-such-trainer]\n"+
		"space: [{name: lr, type: float, min: 0.01, max: 0.1}]\nobjective: {metric: val_loss}\nbudget: {max_trials: 2}\n"), 0o644))
	d.o.campaign = "other.yaml"
	_, err = d.loadCampaign()
	require.ErrorContains(t, err, "--campaign other.yaml: command[0]: bin/no-such-trainer: no such file (resolved against ./)")
	require.Equal(t, ExitUsage, ExitCode(err))
	// A bad spec names the flag and the file.
	require.NoError(t, os.WriteFile("bad.yaml", []byte("name: bad\ncommand: []\n"), 0o644))
	d.o.campaign = "bad.yaml"
	_, err = d.loadCampaign()
	require.ErrorContains(t, err, "--campaign bad.yaml: ")
	require.Equal(t, ExitUsage, ExitCode(err))
}
