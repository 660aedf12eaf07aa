package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/trial"
)

// testTimeout bounds every wait on a real process; generous for a loaded
// 2-core machine, and only ever reached when something is broken.
const testTimeout = 15 * time.Second

func newLauncher(t *testing.T, slots int, gpus ...GPU) *LocalLauncher {
	t.Helper()
	if gpus == nil {
		gpus = []GPU{} // no detection: a host without GPUs
	}
	host, err := NewLocalHost(context.Background(), LocalConfig{Slots: slots, GPUs: gpus})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLocalLauncher(host)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// shSpec is a spec whose trainer is a shell script (argv, no shell
// parsing by the launcher: the script is one argument of /bin/sh -c).
func shSpec(t *testing.T, script string, nodes ...string) LaunchSpec {
	t.Helper()
	dir := t.TempDir()
	if len(nodes) == 0 {
		nodes = []string{SlotID(0)}
	}
	return LaunchSpec{
		TrialID:       "t-1",
		CampaignID:    "c-1",
		Command:       []string{"/bin/sh", "-c", script},
		Params:        []byte(`{"lr":0.1}`),
		Nodes:         nodes,
		CheckpointDir: filepath.Join(dir, "ckpt"),
		RunDir:        filepath.Join(dir, "run-1"),
	}
}

func launch(t *testing.T, l *LocalLauncher, spec LaunchSpec) *LocalProcess {
	t.Helper()
	p, err := l.Launch(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	lp := p.(*LocalProcess)
	t.Cleanup(func() { lp.Stop(0) })
	return lp
}

func waitExit(t *testing.T, p Process) ExitStatus {
	t.Helper()
	select {
	case <-p.Done():
		return p.Exit()
	case <-time.After(testTimeout):
		t.Fatalf("process did not exit within %v", testTimeout)
		return ExitStatus{}
	}
}

// waitFor polls cond until it holds or the test deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a real condition, not synchronising
	}
}

// groupMembers lists the live (non-zombie) processes of process group
// pgid, from /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, ok := procStat(pid)
		if ok && group == pgid && state != "Z" && state != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat returns the state and process group of pid.
func procStat(pid int) (state string, pgid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	f := strings.Fields(rest)
	if len(f) < 3 {
		return "", 0, false
	}
	pgid, err = strconv.Atoi(f[2])
	return f[0], pgid, err == nil
}

func envOf(t *testing.T, log string) map[string]string {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env
}

func TestLaunchSetsProtocolEnvAndFiles(t *testing.T) {
	l := newLauncher(t, 3, GPU{Index: 0}, GPU{Index: 1}, GPU{Index: 3, Name: "Fake GPU"})
	spec := shSpec(t, `env; echo "PWD_IS=$(pwd -P)"`, "local-2", "local-0")
	spec.Env = map[string]string{"FOO": "bar baz", trial.EnvNodes: "99", EnvCUDAVisibleDevices: "7"}
	spec.ResumeFrom = "/ckpt/step-10"
	p := launch(t, l, spec)
	if st := waitExit(t, p); !st.OK() {
		t.Fatalf("exit %+v, want OK", st)
	}

	run, _ := filepath.Abs(spec.RunDir)
	ckpt, _ := filepath.Abs(spec.CheckpointDir)
	env := envOf(t, p.LogFile())
	want := map[string]string{
		trial.EnvTrialID:       "t-1",
		trial.EnvCampaignID:    "c-1",
		trial.EnvParamsFile:    filepath.Join(run, ParamsFileName),
		trial.EnvNodes:         "2",
		trial.EnvHostfile:      filepath.Join(run, HostfileName),
		trial.EnvCheckpointDir: ckpt,
		trial.EnvResumeFrom:    "/ckpt/step-10",
		trial.EnvReportFile:    filepath.Join(run, ReportFileName),
		EnvCUDAVisibleDevices:  "3,0", // the GPUs of local-2 and local-0, in node order
		"FOO":                  "bar baz",
		"PATH":                 os.Getenv("PATH"), // inherited
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if tok := env[EnvRunToken]; !strings.HasPrefix(tok, trialKey(ckpt)+"-") {
		t.Errorf("%s = %q, want the trial key %s, a dash and a random part", EnvRunToken, tok, trialKey(ckpt))
	}
	realRun, _ := filepath.EvalSymlinks(run)
	if env["PWD_IS"] != realRun {
		t.Errorf("working directory %q, want the run dir %q", env["PWD_IS"], realRun)
	}
	if p.ReportFile() != want[trial.EnvReportFile] || p.LogFile() != filepath.Join(run, LogFileName) {
		t.Errorf("ReportFile %q LogFile %q", p.ReportFile(), p.LogFile())
	}

	if b, err := os.ReadFile(env[trial.EnvParamsFile]); err != nil || string(b) != `{"lr":0.1}` {
		t.Errorf("params file = %q, %v", b, err)
	}
	if b, err := os.ReadFile(env[trial.EnvHostfile]); err != nil || string(b) != "local-2\nlocal-0\n" {
		t.Errorf("hostfile = %q, %v; want one node per line", b, err)
	}
	if fi, err := os.Stat(env[trial.EnvReportFile]); err != nil || fi.Size() != 0 {
		t.Errorf("report file: %v, %v; want an empty file", fi, err)
	}
	if fi, err := os.Stat(ckpt); err != nil || !fi.IsDir() {
		t.Errorf("checkpoint dir not created: %v", err)
	}
}

// The trainer sees the spec's budget, and no budget at all (both variables
// empty) when the spec has none, whatever the launcher's own environment
// or the trial's env say.
func TestLaunchPassesTheBudget(t *testing.T) {
	t.Setenv(trial.EnvBudget, "7")
	t.Setenv(trial.EnvBudgetUnit, trial.BudgetSteps)
	cases := []struct {
		name           string
		budget         float64
		unit           string
		want, wantUnit string
	}{
		{"samples", 64000, trial.BudgetSamples, "64000", trial.BudgetSamples},
		{"epochs", 2.5, trial.BudgetEpochs, "2.5", trial.BudgetEpochs},
		{"steps", 1e6, trial.BudgetSteps, "1000000", trial.BudgetSteps},
		{"none", 0, "", "", ""},
	}
	l := newLauncher(t, 1)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := shSpec(t, `echo "budget=[$GLEANER_BUDGET]"; echo "unit=[$GLEANER_BUDGET_UNIT]"`)
			spec.Env = map[string]string{trial.EnvBudget: "99", trial.EnvBudgetUnit: trial.BudgetEpochs}
			spec.Budget, spec.BudgetUnit = c.budget, c.unit
			p := launch(t, l, spec)
			if st := waitExit(t, p); !st.OK() {
				t.Fatalf("exit %+v, want OK", st)
			}
			env := envOf(t, p.LogFile())
			if env["budget"] != "["+c.want+"]" || env["unit"] != "["+c.wantUnit+"]" {
				t.Errorf("trainer saw %s=%s %s=%s, want [%s] [%s]", trial.EnvBudget, env["budget"], trial.EnvBudgetUnit, env["unit"], c.want, c.wantUnit)
			}
		})
	}
}

func TestLaunchWithoutGPUsLeavesCUDAUnset(t *testing.T) {
	t.Setenv(EnvCUDAVisibleDevices, "")
	os.Unsetenv(EnvCUDAVisibleDevices)
	l := newLauncher(t, 4)
	spec := shSpec(t, "env", "local-0", "local-1", "local-3")
	spec.Params = nil
	p := launch(t, l, spec)
	waitExit(t, p)
	env := envOf(t, p.LogFile())
	if v, ok := env[EnvCUDAVisibleDevices]; ok {
		t.Errorf("CUDA_VISIBLE_DEVICES = %q on a host without GPUs, want unset", v)
	}
	if env[trial.EnvNodes] != "3" {
		t.Errorf("GLEANER_NODES = %q, want 3", env[trial.EnvNodes])
	}
	if b, _ := os.ReadFile(env[trial.EnvParamsFile]); string(b) != "{}" {
		t.Errorf("params file = %q, want {} for empty params", b)
	}
}

func TestLaunchErrorsNameWhatFailed(t *testing.T) {
	l := newLauncher(t, 2)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(*LaunchSpec)
		want   string
	}{
		{"command not found", func(s *LaunchSpec) { s.Command = []string{"gleaner-no-such-trainer"} }, `command "gleaner-no-such-trainer"`},
		{"missing path", func(s *LaunchSpec) { s.Command = []string{"/nonexistent/train"} }, "no such file"},
		{"empty command", func(s *LaunchSpec) { s.Command = nil }, "command: empty"},
		{"run dir unwritable", func(s *LaunchSpec) { s.RunDir = filepath.Join(file, "run") }, "run dir"},
		{"checkpoint dir unwritable", func(s *LaunchSpec) { s.CheckpointDir = filepath.Join(file, "ckpt") }, "checkpoint dir"},
		{"no checkpoint dir", func(s *LaunchSpec) { s.CheckpointDir = "" }, "checkpoint dir: empty"},
		{"no nodes", func(s *LaunchSpec) { s.Nodes = nil }, "nodes: none"},
		{"not a slot", func(s *LaunchSpec) { s.Nodes = []string{"h50n16"} }, `"h50n16" is not a local slot id`},
		{"slot out of range", func(s *LaunchSpec) { s.Nodes = []string{"local-2"} }, "this host has 2 slots"},
		{"slot twice", func(s *LaunchSpec) { s.Nodes = []string{"local-1", "local-1"} }, "listed twice"},
		{"params not object", func(s *LaunchSpec) { s.Params = []byte("[1]") }, "params: not a JSON object"},
		{"bad env name", func(s *LaunchSpec) { s.Env = map[string]string{"A=B": "c"} }, `env: invalid variable name "A=B"`},
		{"work dir missing", func(s *LaunchSpec) { s.WorkDir = filepath.Join(file, "x") }, "work dir"},
		{"no trial id", func(s *LaunchSpec) { s.TrialID = "" }, "trial id: empty"},
		{"negative budget", func(s *LaunchSpec) { s.Budget, s.BudgetUnit = -1, trial.BudgetSamples }, "budget: -1"},
		{"NaN budget", func(s *LaunchSpec) { s.Budget, s.BudgetUnit = math.NaN(), trial.BudgetSamples }, "budget: NaN"},
		{"infinite budget", func(s *LaunchSpec) { s.Budget, s.BudgetUnit = math.Inf(1), trial.BudgetSamples }, "budget: +Inf"},
		{"budget without unit", func(s *LaunchSpec) { s.Budget = 100 }, `budget unit: ""`},
		{"unknown budget unit", func(s *LaunchSpec) { s.Budget, s.BudgetUnit = 100, "tokens" }, `budget unit: "tokens"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := shSpec(t, "exit 0")
			tc.change(&spec)
			p, err := l.Launch(context.Background(), spec)
			if err == nil {
				p.Stop(0)
				t.Fatalf("Launch succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Launch(ctx, shSpec(t, "exit 0")); !errors.Is(err, context.Canceled) {
		t.Errorf("Launch with a cancelled context: %v", err)
	}
}

// trapScript starts a trainer that runs onTerm on SIGTERM, touches a
// marker once the trap is in place, then idles in an interruptible wait.
func trapScript(onTerm string) string {
	return `trap '` + onTerm + `' TERM; touch "$GLEANER_CHECKPOINT_DIR/ready"; while :; do sleep 1 & wait $!; done`
}

func waitReady(t *testing.T, spec LaunchSpec) {
	t.Helper()
	waitFor(t, "the trainer to install its TERM trap", func() bool {
		_, err := os.Stat(filepath.Join(spec.CheckpointDir, "ready"))
		return err == nil
	})
}

func TestStopGraceful(t *testing.T) {
	l := newLauncher(t, 1)
	spec := shSpec(t, trapScript(`echo checkpointed > "$GLEANER_CHECKPOINT_DIR/ckpt"; exit 0`))
	p := launch(t, l, spec)
	waitReady(t, spec)
	st := p.Stop(testTimeout)
	if !st.OK() || st.Killed {
		t.Fatalf("Stop = %+v, want a graceful exit 0", st)
	}
	if b, err := os.ReadFile(filepath.Join(spec.CheckpointDir, "ckpt")); err != nil || string(b) != "checkpointed\n" {
		t.Errorf("checkpoint %q, %v: the TERM handler did not run", b, err)
	}
	if got := p.Exit(); got != st {
		t.Errorf("Exit() = %+v, Stop returned %+v", got, st)
	}
	if again := p.Stop(time.Second); again != st {
		t.Errorf("second Stop = %+v, want %+v", again, st)
	}
	waitFor(t, "the group to be empty", func() bool { return len(groupMembers(t, p.PID())) == 0 })
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	l := newLauncher(t, 1)
	spec := shSpec(t, trapScript(""))
	p := launch(t, l, spec)
	waitReady(t, spec)
	st := p.Stop(200 * time.Millisecond)
	want := ExitStatus{Code: -1, Signal: "killed", Killed: true}
	if st != want {
		t.Fatalf("Stop = %+v, want %+v", st, want)
	}
	if p.Exit() != want {
		t.Errorf("Exit() = %+v, want %+v", p.Exit(), want)
	}
	waitFor(t, "the group to be empty", func() bool { return len(groupMembers(t, p.PID())) == 0 })
}

func TestConcurrentStops(t *testing.T) {
	l := newLauncher(t, 1)
	spec := shSpec(t, trapScript("exit 0"))
	p := launch(t, l, spec)
	waitReady(t, spec)
	results := make(chan ExitStatus, 3)
	for range 3 {
		go func() { results <- p.Stop(testTimeout) }()
	}
	for range 3 {
		if st := <-results; !st.OK() {
			t.Errorf("Stop = %+v, want OK", st)
		}
	}
}

// A child that ignores SIGTERM and outlives its parent must not survive
// the trainer, whether the trainer exits by itself or is stopped.
func TestLeftoverGroupMembersAreKilled(t *testing.T) {
	child := `(trap '' TERM; exec sleep 300) & echo $! > "$GLEANER_CHECKPOINT_DIR/child.pid"; `
	t.Run("leader exits", func(t *testing.T) {
		l := newLauncher(t, 1)
		spec := shSpec(t, child+"exit 0")
		p := launch(t, l, spec)
		if st := waitExit(t, p); !st.OK() || st.Killed {
			t.Errorf("exit %+v, want OK", st)
		}
		assertChildGone(t, spec, p.PID())
	})
	t.Run("stopped", func(t *testing.T) {
		l := newLauncher(t, 1)
		spec := shSpec(t, child+trapScript("exit 0"))
		p := launch(t, l, spec)
		waitReady(t, spec)
		if st := p.Stop(testTimeout); !st.OK() || st.Killed {
			t.Errorf("Stop = %+v, want a graceful exit of the leader", st)
		}
		assertChildGone(t, spec, p.PID())
	})
}

func assertChildGone(t *testing.T, spec LaunchSpec, pgid int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(spec.CheckpointDir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if _, pg, ok := procStat(child); ok && pg != pgid {
		t.Fatalf("child %d is in group %d, not the trainer's %d", child, pg, pgid)
	}
	waitFor(t, "the trainer's group to be empty", func() bool { return len(groupMembers(t, pgid)) == 0 })
}

func TestExitCodeAndSignalSurfaced(t *testing.T) {
	l := newLauncher(t, 1)
	p := launch(t, l, shSpec(t, "echo failing >&2; exit 3"))
	if st := waitExit(t, p); st.OK() || st.Code != 3 || st.Signal != "" || st.Killed {
		t.Errorf("exit %+v, want code 3", st)
	}
	if b, _ := os.ReadFile(p.LogFile()); string(b) != "failing\n" {
		t.Errorf("log %q, want stderr captured", b)
	}
	p = launch(t, l, shSpec(t, "kill -USR1 $$"))
	want := ExitStatus{Code: -1, Signal: syscall.SIGUSR1.String()}
	if st := waitExit(t, p); st != want {
		t.Errorf("exit %+v, want %+v", st, want)
	}
}

// TestHelperLauncher is not a test: TestPdeathsig runs the test binary as a
// stand-in worker that launches a trainer and is then SIGKILLed.
func TestHelperLauncher(t *testing.T) {
	if os.Getenv("GLEANER_CLUSTER_HELPER") != "worker" {
		t.Skip("helper process for TestPdeathsig")
	}
	l := newLauncher(t, 1)
	spec := shSpec(t, "")
	spec.Command = []string{"sleep", "300"}
	p, err := l.Launch(context.Background(), spec)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("cgroup", p.(*LocalProcess).Cgroup())
	fmt.Println("pid", p.(*LocalProcess).PID())
	<-p.Done() // until killed
}

func TestPdeathsigKillsTrainerWhenWorkerDies(t *testing.T) {
	worker := exec.Command(os.Args[0], "-test.run=^TestHelperLauncher$", "-test.v")
	worker.Env = append(os.Environ(), "GLEANER_CLUSTER_HELPER=worker")
	out, err := worker.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	defer worker.Wait()
	defer worker.Process.Kill()
	pid := 0
	sc := bufio.NewScanner(out)
	for pid == 0 && sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, _ = strconv.Atoi(rest)
		}
		if dir, ok := strings.CutPrefix(sc.Text(), "cgroup "); ok && dir != "" {
			// A dead worker leaves its runs' cgroups; only a later launch
			// of the same trial would remove this one.
			t.Cleanup(func() {
				if _, err := (runCgroup{dir: dir}).remove(time.Now().Add(testTimeout)); err != nil {
					t.Error(err)
				}
			})
		}
	}
	if pid == 0 {
		t.Fatalf("helper worker printed no trainer pid (%v)", sc.Err())
	}
	if state, _, ok := procStat(pid); !ok || state == "Z" {
		t.Fatalf("trainer %d not running before the worker died", pid)
	}
	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the trainer to die with its worker", func() bool {
		state, _, ok := procStat(pid)
		return !ok || state == "Z" || state == "X"
	})
}
