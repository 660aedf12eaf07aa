package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gleaner-hpc/gleaner/trial"
)

// Files of a run, inside LaunchSpec.RunDir.
const (
	ParamsFileName = "params.json"  // spec.Params; GLEANER_PARAMS_FILE
	HostfileName   = "hostfile"     // one node id per line; GLEANER_HOSTFILE
	ReportFileName = "report.jsonl" // appended by the trainer; GLEANER_REPORT_FILE
	LogFileName    = "trainer.log"  // the trainer's stdout and stderr
)

// EnvCUDAVisibleDevices is set to the trial's GPU indices on a GPU host.
const EnvCUDAVisibleDevices = "CUDA_VISIBLE_DEVICES"

// EnvRunToken is set to a token unique to each launch. Every process the
// trainer starts inherits it, whatever its session or process group, so
// the launcher finds them all in /proc when it stops the run; a process
// that clears its environment is the one that escapes.
const EnvRunToken = "GLEANER_RUN_TOKEN"

// The interface collective libraries use between hosts (LaunchSpec.SocketIfname).
const (
	EnvGlooSocketIfname = "GLOO_SOCKET_IFNAME"
	EnvNCCLSocketIfname = "NCCL_SOCKET_IFNAME"
)

func (s LaunchSpec) allNodes() []string {
	if len(s.AllNodes) > 0 {
		return s.AllNodes
	}
	return s.Nodes
}

// ErrLeftoversAlive is returned by Launch when processes of an earlier
// run of the same trial survive SIGKILL for 10 s (a process stuck in
// uninterruptible sleep: a hung file system, a GPU driver).
var ErrLeftoversAlive = errors.New("leftover processes of an earlier run still alive")

// LocalLauncher runs trainers as processes on this host, a node being one
// slot of the host (see LocalHost). Each trainer runs in its own process
// group, in a cgroup of its own where cgroup v2 allows, and with a run
// token in its environment; stopping it reaches every process it started
// through all three. It gets SIGKILL if the worker dies (Pdeathsig), and
// the next launch of the same trial kills what it left.
type LocalLauncher struct {
	host    LocalHost
	cgroups cgroupHome
	policy  TrainerPolicy
	// inherited caches what the policy passes of this process's
	// environment (inheritedFrom): it changes only with os.Setenv,
	// Unsetenv, Clearenv or SetPolicy, and matching every variable against
	// every pattern at each launch cost more than the rest of the launch's
	// bookkeeping.
	envMu         sync.Mutex
	inheritedFrom []string
	inherited     []string
}

// NewLocalLauncher launches on host's slots. It probes once whether runs
// can have cgroups of their own (see Cgroup) and, if so, removes the empty
// run cgroups a dead worker left there.
func NewLocalLauncher(host LocalHost) (*LocalLauncher, error) {
	if host.Slots < 1 {
		return nil, fmt.Errorf("local launcher: slots: %d: %w", host.Slots, errNoSlots)
	}
	if len(host.GPUs) > 0 && len(host.GPUs) != host.Slots {
		return nil, fmt.Errorf("local launcher: %d slots but %d GPUs (one GPU per slot)", host.Slots, len(host.GPUs))
	}
	l := &LocalLauncher{host: host, cgroups: probeCgroups()}
	if l.cgroups.dir != "" {
		l.cgroups.pruneEmpty() // a dead worker's
	}
	return l, nil
}

// SetPolicy sets the commands the launcher starts and the environment
// their trainers inherit (the zero TrainerPolicy until then: any command,
// the default environment). Call it before the first Launch.
func (l *LocalLauncher) SetPolicy(p TrainerPolicy) error {
	if err := p.Env.Validate(); err != nil {
		return err
	}
	l.envMu.Lock()
	l.policy, l.inheritedFrom = p, nil
	l.envMu.Unlock()
	return nil
}

// Policy is the launcher's TrainerPolicy.
func (l *LocalLauncher) Policy() TrainerPolicy { return l.policy }

// Host is the launcher's slot layout.
func (l *LocalLauncher) Host() LocalHost { return l.host }

// Cgroup is the cgroup v2 directory (this process's own cgroup) under
// which each run gets a cgroup of its own, or "" when runs are tracked by
// process group and run token only: no cgroup v2, no cgroup.kill (Linux
// before 5.14), or no permission to create cgroups there.
func (l *LocalLauncher) Cgroup() string { return l.cgroups.dir }

// Launch prepares spec.RunDir and starts spec.Command there (or in
// spec.WorkDir). It returns once the command has been exec'd; ctx bounds
// only the launch, not the process, which runs until it exits or is
// stopped.
//
// RunDir receives params.json (spec.Params, "{}" when empty), hostfile
// (spec.Nodes, one per line), report.jsonl (created if missing, never
// truncated, so a retried run in the same RunDir can resume tailing at an
// offset) and trainer.log (stdout and stderr, appended). CheckpointDir is
// created. The environment is the part of os.Environ() the launcher's
// EnvPolicy passes (never the worker's secrets: DefaultEnvDeny), then
// spec.Env, then the GLEANER_* variables of package trial (trial.Env.Vars:
// GLEANER_BUDGET and GLEANER_BUDGET_UNIT are set empty without a
// spec.Budget, so no budget of the worker's own environment reaches the
// trainer), GLEANER_RUN_TOKEN and, on a GPU host, CUDA_VISIBLE_DEVICES =
// the GPU indices of spec.Nodes, comma separated: a spec cannot override
// the protocol's variables.
//
// The launcher's CommandPolicy is checked first: a command it does not
// allow, or a spec.Env setting a denied variable, fails with an error
// that is ErrNotAllowed (*CommandNotAllowedError, ErrEnvDenied) before
// anything is created, killed or started. An allowed command is executed
// by the path the policy matched (argv[0] stays as given).
//
// Before it starts the trainer, Launch SIGKILLs every process left from
// an earlier launch of the same trial, on this host, by any launcher: a
// process whose environment has a run token and the same absolute
// GLEANER_CHECKPOINT_DIR (a dead worker's, or a still running one's), and
// every process in the cgroup of such a run under this process's cgroup.
// It waits until they are gone;
// if some survive for 10 s it fails with ErrLeftoversAlive rather than
// start a second trainer on the same checkpoints. The new process's
// LeftoversKilled lists them.
func (l *LocalLauncher) Launch(ctx context.Context, spec LaunchSpec) (Process, error) {
	fail := func(err error) (Process, error) {
		return nil, fmt.Errorf("launch trial %q: %w", spec.TrialID, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	gpus, err := l.check(spec)
	if err != nil {
		return fail(err)
	}
	path, err := l.commandPath(spec)
	if err != nil {
		return fail(err)
	}
	run, err := prepareRun(spec)
	if err != nil {
		return fail(err)
	}
	var leftovers []int
	if !spec.Swept {
		if leftovers, err = l.killLeftovers(run.checkpointDir); err != nil {
			return fail(err)
		}
	}
	token := newRunToken(l.trialKey(run.checkpointDir))
	vars := trial.Env{
		TrialID: spec.TrialID, CampaignID: spec.CampaignID, ParamsFile: run.params,
		Nodes: len(spec.allNodes()), Hostfile: run.hostfile, CheckpointDir: run.checkpointDir,
		ResumeFrom: spec.ResumeFrom, ReportFile: run.report, Budget: spec.Budget, BudgetUnit: spec.BudgetUnit,
	}.Vars()
	if spec.Rendezvous != nil {
		vars = append(vars, spec.Rendezvous.Vars()...)
	}
	base := l.inheritedEnv()
	if spec.SocketIfname != "" {
		for _, name := range []string{EnvGlooSocketIfname, EnvNCCLSocketIfname} {
			inEnv := slices.ContainsFunc(base, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
			if _, inSpec := spec.Env[name]; !inEnv && !inSpec {
				vars = append(vars, [2]string{name, spec.SocketIfname})
			}
		}
	}
	vars = append(vars, [2]string{EnvRunToken, token})
	if len(l.host.GPUs) > 0 {
		vars = append(vars, [2]string{EnvCUDAVisibleDevices, gpus})
	}
	env := mergeEnv(base, spec.Env, vars)

	logFile, err := os.OpenFile(run.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fail(fmt.Errorf("log file: %w", err))
	}
	defer logFile.Close() // the child has its own copy once started
	command := func() *exec.Cmd {
		cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
		if path != "" {
			cmd = exec.Command(path, spec.Command[1:]...)
			cmd.Args[0] = spec.Command[0]
		}
		cmd.Dir = run.workDir
		cmd.Env = env
		cmd.Stdout = logFile
		cmd.Stderr = logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	cmd, cgroup, err := l.start(command, token)
	if err != nil {
		return fail(fmt.Errorf("start command %q: %w", spec.Command[0], err))
	}
	p := &LocalProcess{
		cmd:       cmd,
		pid:       cmd.Process.Pid,
		report:    run.report,
		log:       run.log,
		done:      make(chan struct{}),
		match:     runMatch(token),
		cgroup:    cgroup,
		leftovers: leftovers,
	}
	liveLeaders.Store(p.pid, struct{}{})
	go p.wait()
	return p, nil
}

// inheritedEnv is the part of os.Environ() the launcher's EnvPolicy passes.
// mergeEnv copies it, never appends to it.
func (l *LocalLauncher) inheritedEnv() []string {
	environ := os.Environ()
	l.envMu.Lock()
	defer l.envMu.Unlock()
	if l.inheritedFrom == nil || !slices.Equal(environ, l.inheritedFrom) {
		l.inheritedFrom, l.inherited = environ, slices.Clip(l.policy.Env.Inherited(environ))
	}
	return l.inherited
}

// start starts the trainer in a new cgroup of the run where it can, and
// without one where it cannot: a failure to create or enter the cgroup
// is not the trainer's, and the run token still tracks it.
func (l *LocalLauncher) start(command func() *exec.Cmd, token string) (*exec.Cmd, runCgroup, error) {
	if l.cgroups.dir != "" {
		if c, fd, err := l.cgroups.create(token); err == nil {
			cmd := command()
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
			err := startOnStableThread(cmd)
			syscall.Close(fd)
			if err == nil {
				return cmd, c, nil
			}
			_ = syscall.Rmdir(c.dir) // and try again without: an exec error will recur
		}
	}
	cmd := command()
	return cmd, runCgroup{}, startOnStableThread(cmd)
}

// KillLeftovers kills every process left by earlier runs of the trial
// whose checkpoint directory is checkpointDir (the same processes Launch
// kills first) and returns their pids, sorted. Callers that read the
// checkpoint directory before a launch call it first, so that no process
// of a dead worker's trainer writes or prunes checkpoints meanwhile.
func (l *LocalLauncher) KillLeftovers(checkpointDir string) ([]int, error) {
	dir, err := filepath.Abs(checkpointDir)
	if err != nil {
		return nil, err
	}
	return l.killLeftovers(dir)
}

// killLeftovers kills the processes of earlier runs of the trial with
// checkpoint directory dir (absolute) and returns their pids, sorted.
func (l *LocalLauncher) killLeftovers(dir string) ([]int, error) {
	deadline := time.Now().Add(sweepTimeout)
	var killed []int
	var cgErr error
	if l.cgroups.dir != "" {
		killed, cgErr = l.cgroups.leftovers(l.trialKey(dir), deadline)
	}
	match := leftoverMatch(dir, l.trialKey(dir))
	swept, alive := sweep(func() []int { return scanProcs(procRoot, match) },
		func(pid int) bool { return environMatches(pid, match) }, deadline)
	killed = append(killed, swept...)
	slices.Sort(killed)
	killed = slices.Compact(killed)
	switch {
	case len(alive) > 0:
		return killed, fmt.Errorf("pids %v after %v: %w", alive, sweepTimeout, ErrLeftoversAlive)
	case errors.Is(cgErr, errStillAlive):
		// %v: cgErr may join file system errors of other cgroups, which
		// must not make the launch look like a bad spec to errors.Is.
		return killed, fmt.Errorf("%w: %v", ErrLeftoversAlive, cgErr)
	}
	// Any other cgroup error (an empty cgroup that could not be removed, a
	// cgroup.kill refused while the sweep found every process by token)
	// leaves nothing that would share the checkpoints.
	return killed, nil
}

// check validates spec and returns the CUDA_VISIBLE_DEVICES value.
func (l *LocalLauncher) check(spec LaunchSpec) (string, error) {
	switch {
	case spec.TrialID == "":
		return "", errors.New("trial id: empty")
	case len(spec.Command) == 0 || spec.Command[0] == "":
		return "", errors.New("command: empty")
	case spec.RunDir == "":
		return "", errors.New("run dir: empty")
	case spec.CheckpointDir == "":
		return "", errors.New("checkpoint dir: empty")
	case len(spec.Nodes) == 0:
		return "", errors.New("nodes: none (a trial runs on at least one node)")
	case spec.Budget < 0 || math.IsNaN(spec.Budget) || math.IsInf(spec.Budget, 0):
		return "", fmt.Errorf("budget: %v is neither a finite number > 0 nor 0 (none)", spec.Budget)
	case spec.Budget > 0 && !slices.Contains([]string{trial.BudgetSamples, trial.BudgetSteps, trial.BudgetEpochs}, spec.BudgetUnit):
		return "", fmt.Errorf("budget unit: %q is not %s, %s or %s", spec.BudgetUnit, trial.BudgetSamples, trial.BudgetSteps, trial.BudgetEpochs)
	}
	for k := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return "", fmt.Errorf("env: invalid variable name %q", k)
		}
	}
	if err := l.policy.Env.CheckSpecEnv(spec.Env); err != nil {
		return "", err
	}
	if len(spec.Params) > 0 && !isJSONObject(spec.Params) {
		return "", errors.New("params: not a JSON object")
	}
	gpus := make([]string, 0, len(spec.Nodes))
	seen := make(map[int]bool, len(spec.Nodes))
	for _, node := range spec.Nodes {
		i, err := l.host.ParseNodeID(node)
		if err != nil {
			return "", fmt.Errorf("nodes: %w", err)
		}
		if i >= l.host.Slots {
			return "", fmt.Errorf("nodes: %q: this host has %d slots (%s..%s)", node, l.host.Slots, l.host.NodeID(0), l.host.NodeID(l.host.Slots-1))
		}
		if seen[i] {
			return "", fmt.Errorf("nodes: %q listed twice", node)
		}
		seen[i] = true
		if i < len(l.host.GPUs) {
			gpus = append(gpus, strconv.Itoa(l.host.GPUs[i].Index))
		}
	}
	return strings.Join(gpus, ","), nil
}

// commandPath is the path to execute spec.Command[0] by when the
// launcher's CommandPolicy allows it, "" when the policy allows any
// command (exec resolves it then, as it always did).
func (l *LocalLauncher) commandPath(spec LaunchSpec) (string, error) {
	if l.policy.Commands.AllowsAny() {
		return "", nil
	}
	dir := spec.WorkDir
	if dir == "" {
		dir = spec.RunDir
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("work dir: %w", err)
	}
	return l.policy.Commands.Check(spec.Command[0], dir)
}

func isJSONObject(b []byte) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(b, &obj) == nil && obj != nil
}

// runFiles are the absolute paths of one run.
type runFiles struct {
	params, hostfile, report, log, checkpointDir, workDir string
}

func prepareRun(spec LaunchSpec) (runFiles, error) {
	var r runFiles
	dir, err := filepath.Abs(spec.RunDir)
	if err != nil {
		return r, fmt.Errorf("run dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, fmt.Errorf("run dir: %w", err)
	}
	if r.checkpointDir, err = filepath.Abs(spec.CheckpointDir); err != nil {
		return r, fmt.Errorf("checkpoint dir: %w", err)
	}
	if err := os.MkdirAll(r.checkpointDir, 0o755); err != nil {
		return r, fmt.Errorf("checkpoint dir: %w", err)
	}
	r.workDir = dir
	if spec.WorkDir != "" {
		if r.workDir, err = filepath.Abs(spec.WorkDir); err != nil {
			return r, fmt.Errorf("work dir: %w", err)
		}
		if fi, err := os.Stat(r.workDir); err != nil {
			return r, fmt.Errorf("work dir: %w", err)
		} else if !fi.IsDir() {
			return r, fmt.Errorf("work dir: %s is not a directory", r.workDir)
		}
	}
	r.params = filepath.Join(dir, ParamsFileName)
	r.hostfile = filepath.Join(dir, HostfileName)
	r.report = filepath.Join(dir, ReportFileName)
	r.log = filepath.Join(dir, LogFileName)

	params := spec.Params
	if len(params) == 0 {
		params = []byte("{}")
	}
	if err := os.WriteFile(r.params, params, 0o644); err != nil {
		return r, fmt.Errorf("params file: %w", err)
	}
	if err := os.WriteFile(r.hostfile, []byte(strings.Join(spec.allNodes(), "\n")+"\n"), 0o644); err != nil {
		return r, fmt.Errorf("hostfile: %w", err)
	}
	f, err := os.OpenFile(r.report, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return r, fmt.Errorf("report file: %w", err)
	}
	if err := f.Close(); err != nil {
		return r, fmt.Errorf("report file: %w", err)
	}
	return r, nil
}

// mergeEnv returns base with the variables of each later layer replacing
// earlier ones of the same name; the new ones are appended in order.
func mergeEnv(base []string, user map[string]string, vars [][2]string) []string {
	over := make(map[string]string, len(user)+len(vars))
	var order []string
	set := func(k, v string) {
		if _, ok := over[k]; !ok {
			order = append(order, k)
		}
		over[k] = v
	}
	userKeys := make([]string, 0, len(user))
	for k := range user {
		userKeys = append(userKeys, k)
	}
	slices.Sort(userKeys)
	for _, k := range userKeys {
		set(k, user[k])
	}
	for _, kv := range vars {
		set(kv[0], kv[1])
	}
	env := make([]string, 0, len(base)+len(order))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := over[k]; !ok {
			env = append(env, kv)
		}
	}
	for _, k := range order {
		env = append(env, k+"="+over[k])
	}
	return env
}
