package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/activities"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// The check's trial, as a campaign would name it.
const (
	checkCampaign = "trainer-check"
	checkTrial    = "t00001"
)

// maxCheckTimeout bounds --timeout below the 10 minutes the SDK's
// in-process activity environment gives an activity, so that a run the
// check times out is stopped as a worker stops one.
const maxCheckTimeout = 9 * time.Minute

// trainerCheckOptions are `gleaner trainer check`'s flags.
type trainerCheckOptions struct {
	budget    float64
	unit      string
	params    []string
	env       []string
	nodes     int
	workdir   string
	stopAfter int
	grace     time.Duration
	timeout   time.Duration
	metric    string
	dir       string
	keep      bool
	json      bool
	gpus      bool
}

func newTrainerCmd() *cobra.Command {
	trainer := &cobra.Command{
		Use:   "trainer",
		Short: "Work on a trainer before a campaign runs it",
		Args:  exactArgs(0, "a subcommand: check"),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	trainer.AddCommand(newTrainerCheckCmd())
	return trainer
}

func newTrainerCheckCmd() *cobra.Command {
	o := &trainerCheckOptions{}
	cmd := &cobra.Command{
		Use:   "check [flags] -- COMMAND [ARG...]",
		Short: "Run a trainer under the trial protocol, stop it, resume it, and say whether it follows the protocol",
		Long: `Runs COMMAND as a worker runs a trial (docs/protocol.md), with no server:
the worker's own code launches it in a temporary trial directory with the
GLEANER_* variables a worker sets, a small budget, the parameters of
--param and --nodes nodes, and reads its report lines. Then:

  run 1  a first start, stopped with SIGTERM at its first reported
         checkpoint or after --stop-after reports: it must write a
         checkpoint, report it and exit 0 within --grace;
  run 2  resumed from that checkpoint (GLEANER_RESUME_FROM): its reports
         must continue the checkpoint's counters, not start again from 0,
         and it must stop by itself at its budget, report a checkpoint
         there and exit 0;
  run 3  resumed from the checkpoint at its budget, with the same budget:
         it must train nothing, report a checkpoint and exit 0.

It prints what it saw (report lines parsed, malformed lines with their
line numbers, metrics, checkpoints, exit statuses) and a verdict line:
PASS, or FAIL with the reasons. Exit status 0 on PASS, 1 on FAIL, 2 for a
bad command line. The trial directory is removed after a PASS and kept
after a FAIL (its path is printed), unless --dir or --keep say otherwise.

A run must last long enough to be stopped mid-run (a few seconds): give
a budget, or a parameter, that makes it so.

--param NAME=VALUE puts a parameter in the params file: a number stays a
JSON number (as float and int dimensions), anything else is a JSON
string (as a choice); write VALUE as a JSON string ("64", quotes
included) for a number-like choice. COMMAND runs without a shell, in
--workdir (default: the current directory), like a campaign's command.`,
		Example: `  gleaner trainer check -- python3 examples/python-minimal/train.py
  gleaner trainer check --budget 300 --param lr=0.05 --param step_ms=5 -- bin/go-mlp
  gleaner trainer check --unit samples --budget 20000 --metric val_loss --json -- ./train.sh`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || cmd.ArgsLenAtDash() != 0 {
				return usageErrorf("give the trainer's command after --, e.g. gleaner trainer check -- python3 train.py")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args, cmd.OutOrStdout())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.Float64Var(&o.budget, "budget", 100, "each run's budget (GLEANER_BUDGET), in --unit")
	f.StringVar(&o.unit, "unit", gleaner.BudgetSteps, "what the budget counts: steps, samples or epochs (GLEANER_BUDGET_UNIT)")
	f.StringArrayVar(&o.params, "param", nil, "a parameter NAME=VALUE for the params file (repeatable)")
	f.StringArrayVar(&o.env, "env", nil, "an environment variable NAME=VALUE for the trainer, as a spec's env (repeatable)")
	f.IntVar(&o.nodes, "nodes", 1, "the run's node count (GLEANER_NODES)")
	f.StringVar(&o.workdir, "workdir", "", "where COMMAND runs (default: the current directory)")
	f.IntVar(&o.stopAfter, "stop-after", 3, "send run 1 SIGTERM after this many progress reports, or at its first reported checkpoint if that comes first")
	f.DurationVar(&o.grace, "grace", gleaner.CampaignSpec{}.WithDefaults().Trial.GracePeriod.Std(), "how long a stopped trainer may take to exit before SIGKILL (trial.grace_period)")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "the longest a run may take (at most 9m, and 9m30s with --grace); it is then stopped")
	f.StringVar(&o.metric, "metric", "", "a metric the trainer must report (the campaign's objective)")
	f.StringVar(&o.dir, "dir", "", "a directory for the check's trial, DIR/trainer-check/t00001 (created if needed, kept); default: a temporary one")
	f.BoolVar(&o.keep, "keep", false, "keep the temporary trial directory after a PASS too")
	f.BoolVar(&o.json, "json", false, "print the result as one JSON object")
	f.BoolVar(&o.gpus, "gpus", true, "give each node one of this host's GPUs (CUDA_VISIBLE_DEVICES), as a worker here does, when it has as many; false: none")
	return cmd
}

// checkSetup is the validated command line: the trial every run shares.
type checkSetup struct {
	trial    workflows.TrialInput
	nodes    []string
	dataDir  string
	remove   bool // a temporary directory: removed after a PASS
	maxTime  time.Duration
	stopAt   int
	metric   string
	paramsJS string
	gpus     []cluster.GPU // one per node, or none
}

func (o *trainerCheckOptions) validate(command []string) (checkSetup, error) {
	var s checkSetup
	switch {
	case !(o.budget > 0) || math.IsInf(o.budget, 0):
		return s, usageErrorf("--budget: %v is not a number greater than 0", o.budget)
	case o.unit != gleaner.BudgetSteps && o.unit != gleaner.BudgetSamples && o.unit != gleaner.BudgetEpochs:
		return s, usageErrorf("--unit: %q is not steps, samples or epochs", o.unit)
	case o.nodes < 1:
		return s, usageErrorf("--nodes: %d; a run has at least 1 node", o.nodes)
	case o.stopAfter < 1:
		return s, usageErrorf("--stop-after: %d; stop after at least 1 report", o.stopAfter)
	case o.grace <= 0:
		return s, usageErrorf("--grace: %v must be positive", o.grace)
	case o.timeout <= 0 || o.timeout > maxCheckTimeout:
		return s, usageErrorf("--timeout: %v is not between 0 and %v", o.timeout, maxCheckTimeout)
	case o.timeout+o.grace > maxCheckTimeout+30*time.Second:
		// A run stopped at its timeout still has its grace period to
		// checkpoint, within the in-process activity's 10 minutes.
		return s, usageErrorf("--timeout %v and --grace %v: together at most %v", o.timeout, o.grace, maxCheckTimeout+30*time.Second)
	}
	params, err := parseCheckParams(o.params)
	if err != nil {
		return s, err
	}
	env := map[string]string{}
	for _, kv := range o.env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return s, usageErrorf("--env %q: want NAME=VALUE", kv)
		}
		env[name] = value
	}
	workdir := o.workdir
	if workdir == "" {
		if workdir, err = os.Getwd(); err != nil {
			return s, err
		}
	}
	if workdir, err = filepath.Abs(workdir); err != nil {
		return s, usageErrorf("--workdir: %v", err)
	}
	if fi, err := os.Stat(workdir); err != nil || !fi.IsDir() {
		return s, usageErrorf("--workdir: %s is not a directory", workdir)
	}
	var gpus []cluster.GPU
	if o.gpus {
		// nvidia-smi's absence is no GPUs; a failing one too, here.
		if found, err := cluster.DetectNvidiaGPUs(context.Background()); err == nil && len(found) >= o.nodes {
			gpus = found[:o.nodes]
		}
	}
	js, _ := json.Marshal(params)
	s = checkSetup{
		trial: workflows.TrialInput{
			TrialID: checkTrial, Number: 1, CampaignID: checkCampaign, Pool: "default",
			Params: params, Command: command, WorkDir: workdir, Env: env,
			MinNodes: o.nodes, MaxNodes: o.nodes, ObjectiveMetric: o.metric,
			GracePeriod: o.grace, Budget: o.budget, BudgetUnit: o.unit,
		},
		maxTime: o.timeout, stopAt: o.stopAfter, metric: o.metric, paramsJS: string(js), gpus: gpus,
	}
	for i := range o.nodes {
		s.nodes = append(s.nodes, cluster.SlotID(i))
	}
	if o.dir != "" {
		if s.dataDir, err = filepath.Abs(o.dir); err != nil {
			return s, usageErrorf("--dir: %v", err)
		}
		if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
			return s, usageErrorf("--dir: %v", err)
		}
		if entries, _ := os.ReadDir(filepath.Join(s.dataDir, checkCampaign)); len(entries) > 0 {
			return s, usageErrorf("--dir: %s already holds a check's trial (%s): give an empty directory",
				s.dataDir, filepath.Join(s.dataDir, checkCampaign))
		}
		return s, nil
	}
	if s.dataDir, err = os.MkdirTemp("", "gleaner-trainer-check-"); err != nil {
		return s, err
	}
	s.remove = !o.keep
	return s, nil
}

// parseCheckParams reads --param NAME=VALUE flags: a number is a number,
// a JSON string a string, anything else the string as written.
func parseCheckParams(flags []string) (hpo.Params, error) {
	params := hpo.Params{}
	for _, kv := range flags {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, usageErrorf("--param %q: want NAME=VALUE, e.g. --param lr=0.1", kv)
		}
		if _, dup := params[name]; dup {
			return nil, usageErrorf("--param %s: given twice", name)
		}
		var str string
		switch f, err := strconv.ParseFloat(value, 64); {
		case err == nil && !math.IsInf(f, 0) && !math.IsNaN(f):
			params[name] = hpo.Float(f)
		case strings.HasPrefix(value, `"`) && json.Unmarshal([]byte(value), &str) == nil:
			params[name] = hpo.String(str)
		default:
			params[name] = hpo.String(value)
		}
	}
	return params, nil
}

func (o *trainerCheckOptions) run(ctx context.Context, command []string, stdout io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	setup, err := o.validate(command)
	if err != nil {
		return err
	}
	// Ctrl-C stops the trainer as a worker would (SIGTERM, the grace
	// period) and ends the check, keeping its trial directory.
	ctx, stop := signalContext(ctx)
	defer stop()
	res := runCheck(ctx, setup)
	if s := interruptedBy(ctx); s != nil {
		return withCode(s.exitCode(), fmt.Errorf("trainer check: %v before the check ended: the trainer was stopped; its trial directory is kept: %s", s, res.Dir))
	}
	if setup.remove && res.Pass {
		if err := os.RemoveAll(setup.dataDir); err == nil {
			res.Removed = true
		}
	}
	if o.json {
		if err := writeJSON(stdout, res); err != nil {
			return err
		}
	} else {
		writeCheck(stdout, res)
	}
	if !res.Pass {
		return withCode(ExitFailure, errReported)
	}
	return nil
}

// runCheck runs the trainer three times as a worker would and judges what
// it saw.
func runCheck(ctx context.Context, s checkSetup) CheckResult {
	res := CheckResult{
		Command: s.trial.Command, WorkDir: s.trial.WorkDir, Params: json.RawMessage(s.paramsJS),
		Nodes: len(s.nodes), GPUs: len(s.gpus), Budget: s.trial.Budget, Unit: s.trial.BudgetUnit,
		Grace: s.trial.GracePeriod.String(), Dir: filepath.Join(s.dataDir, checkCampaign, checkTrial),
	}
	c := &checker{setup: s, res: &res}
	stopped := c.runOnce(ctx, 1, "", "first start, stopped with SIGTERM mid-run", true)
	if stopped.Checkpoint != "" && ctx.Err() == nil {
		resumed := c.runOnce(ctx, 2, stopped.Checkpoint, "resumed from run 1's checkpoint, to its budget", false)
		if resumed.budgetEnd(s.trial.BudgetUnit, s.trial.Budget) && ctx.Err() == nil {
			c.runOnce(ctx, 3, resumed.Checkpoint, "resumed at its budget: trains nothing", false)
		}
	}
	c.judge()
	return res
}

// checker runs the trial's runs and gathers the result.
type checker struct {
	setup checkSetup
	res   *CheckResult
}

// runOnce runs run n of the trial through the worker's RunTrial activity,
// from resume (empty: a first start), stopping it mid-run when stopMidRun.
func (c *checker) runOnce(ctx context.Context, n int, resume, purpose string, stopMidRun bool) *CheckRun {
	run := &CheckRun{Run: n, Purpose: purpose, ResumeFrom: resume, workDir: c.setup.trial.WorkDir}
	c.res.Runs = append(c.res.Runs, run)
	launcher, err := newCheckLauncher(len(c.setup.nodes), c.setup.gpus)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	logs := &checkLogger{}
	a := &activities.Activities{Launcher: launcher, DataDir: c.setup.dataDir}
	var suite testsuite.WorkflowTestSuite // the activity alone, in process: no server
	suite.SetLogger(logs)
	env := suite.NewTestActivityEnvironment()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: runCtx})
	env.RegisterActivityWithOptions(a.RunTrial, activity.RegisterOptions{Name: workflows.RunTrialActivityName})

	in := workflows.RunTrialInput{Trial: c.setup.trial, Run: n, Nodes: c.setup.nodes, ResumeFrom: resume}
	type outcome struct {
		res workflows.RunTrialResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		v, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
		var o outcome
		if err == nil {
			o.err = v.Get(&o.res)
		} else {
			o.err = err
			var app *temporal.ApplicationError
			if errors.As(err, &app) && app.HasDetails() {
				_ = app.Details(&o.res)
			}
		}
		done <- o
	}()

	var (
		out     outcome
		proc    *checkProcess
		watch   *cluster.ReportTailer
		reports int
		atEnd   bool // a report reached the budget
		asked   bool // the check sent its stop mid-run
		unit    = c.setup.trial.BudgetUnit
		budget  = c.setup.trial.Budget
	)
	deadline := time.NewTimer(c.setup.maxTime)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case out = <-done:
			break wait
		case proc = <-launcher.launched:
			watch, _ = cluster.NewReportTailer(proc.ReportFile(), 0)
		case <-tick.C:
			if !stopMidRun || watch == nil || asked {
				continue
			}
			got, _ := watch.Poll()
			for _, r := range got {
				if r.Samples > 0 || r.Step > 0 || r.Epoch > 0 || r.Checkpoint != "" {
					reports++
				}
				if r.Checkpoint != "" {
					reports = c.setup.stopAt
				}
				at := CheckCounters{Samples: r.Samples, Step: r.Step, Epoch: r.Epoch}
				if atBudget(counter(at, unit), budget) {
					atEnd = true // not a stop mid-run: let it end
				}
			}
			if reports >= c.setup.stopAt && !atEnd {
				asked = true
				cancel() // the worker's stop: SIGTERM to the group, SIGKILL after the grace period
			}
		case <-deadline.C:
			run.TimedOut = true
			cancel()
		}
	}
	run.Worker = logs.lines()
	if proc == nil { // it ended before the loop heard of its launch
		select {
		case proc = <-launcher.launched:
		default:
		}
	}
	stopOff := int64(-1) // where in the report file SIGTERM came
	if proc != nil {
		run.Log, run.ReportFile = proc.LogFile(), proc.ReportFile()
		// A trainer that exits as the stop comes was not stopped: the
		// worker takes it for a finish and sends no SIGTERM.
		off, took := proc.stopped()
		run.StopSent = asked && off >= 0
		run.StoppedByWorker = off >= 0 && !asked && !run.TimedOut
		run.StopTook = stopTookText(took)
		if run.StopSent {
			stopOff = off
		}
	}
	run.finish(out.res, out.err, stopOff)
	return run
}

// checkLauncher is the worker's local launcher, telling the check what it
// launched; its processes record the stops the worker sends.
type checkLauncher struct {
	*cluster.LocalLauncher // KillLeftovers too, as the worker's
	launched               chan *checkProcess
}

func newCheckLauncher(nodes int, gpus []cluster.GPU) (*checkLauncher, error) {
	if gpus == nil {
		gpus = []cluster.GPU{} // a host without GPUs: no detection
	}
	host, err := cluster.NewLocalHost(context.Background(), cluster.LocalConfig{Slots: nodes, GPUs: gpus})
	if err != nil {
		return nil, err
	}
	l, err := cluster.NewLocalLauncher(host)
	if err != nil {
		return nil, err
	}
	return &checkLauncher{LocalLauncher: l, launched: make(chan *checkProcess, 1)}, nil
}

func (l *checkLauncher) Launch(ctx context.Context, spec cluster.LaunchSpec) (cluster.Process, error) {
	p, err := l.LocalLauncher.Launch(ctx, spec)
	if err != nil {
		return nil, err
	}
	cp := &checkProcess{Process: p, stopOff: -1}
	l.launched <- cp
	return cp, nil
}

// checkProcess records the worker's Stop calls, the report file's size
// when the first came (the lines after it were written after SIGTERM),
// and how long it took.
type checkProcess struct {
	cluster.Process
	stops   atomic.Int32
	mu      sync.Mutex
	stopOff int64 // -1 until a Stop
	took    time.Duration
}

func (p *checkProcess) Stop(grace time.Duration) cluster.ExitStatus {
	if p.stops.Add(1) == 1 {
		off := int64(0)
		if fi, err := os.Stat(p.ReportFile()); err == nil {
			off = fi.Size()
		}
		p.mu.Lock()
		p.stopOff = off
		p.mu.Unlock()
	}
	start := time.Now()
	exit := p.Process.Stop(grace)
	p.mu.Lock()
	p.took = time.Since(start)
	p.mu.Unlock()
	return exit
}

// stopped is the report file's size at the first Stop (-1: none) and how
// long that Stop took.
func (p *checkProcess) stopped() (int64, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopOff, p.took
}

// checkLogger keeps the worker's warnings and errors for the report.
type checkLogger struct {
	mu   sync.Mutex
	msgs []string
}

func (l *checkLogger) Debug(string, ...any) {}
func (l *checkLogger) Info(string, ...any)  {}
func (l *checkLogger) Warn(msg string, kv ...any) {
	l.add(msg, kv)
}
func (l *checkLogger) Error(msg string, kv ...any) { l.add(msg, kv) }

func (l *checkLogger) add(msg string, kv []any) {
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i+1 < len(kv); i += 2 {
		if k := fmt.Sprint(kv[i]); k != "trial" && !strings.HasPrefix(k, "Activity") && !strings.HasPrefix(k, "Workflow") &&
			k != "Namespace" && k != "TaskQueue" && k != "Attempt" {
			fmt.Fprintf(&b, " %s=%v", k, kv[i+1])
		}
	}
	l.mu.Lock()
	l.msgs = append(l.msgs, b.String())
	l.mu.Unlock()
}

func (l *checkLogger) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}
