package slurmdemo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// Settings are one run of the demo. Zero optional fields take the
// defaults the CLI documents.
type Settings struct {
	// Cluster: started with the script (ClusterSettings), or the running
	// one SlurmConf names; or, PBS set, the PBS cluster it names.
	Cluster   ClusterSettings
	SlurmConf string
	PBS       *PBSSettings
	// BatchPartition and PilotPartition are the cluster's partitions.
	BatchPartition, PilotPartition string

	// SWF is the log replayed; Plan the window and its fitting (its
	// ClusterNodes is the cluster's node count).
	SWF  string
	Plan PlanSettings
	// Baseline runs the window once without Gleaner first;
	// BaselineFrom instead reads that pass from an earlier result file.
	Baseline     bool
	BaselineFrom string
	// Control replays the window a second time without Gleaner: how much
	// batch jobs' starts move between two identical passes (the noise
	// floor of Delays).
	Control bool
	// Duration caps a pass (0: until every job of the window has ended,
	// at most Span + longest run + 10 minutes).
	Duration time.Duration
	// Warmup is how long the campaign may take to fill the nodes before
	// the replay starts.
	Warmup time.Duration

	// Gleaner is the gleaner binary (absolute): the worker, and the
	// pilots' agents, run it.
	Gleaner string
	// Campaign is the HPO campaign of real trainers.
	Campaign CampaignSettings
	// Pilots: pool name and the worker's slurm: options.
	Pool       string
	MaxPending int
	PilotTime  time.Duration
	PilotMin   time.Duration
	PilotEvery time.Duration
	// PilotYield is the worker's yield= option: a duration or "off"
	// ("": the worker's default, one bf_interval).
	PilotYield string

	// Out is the directory for the results, logs and trial data.
	Out string
	// Sample is the monitor's interval; Progress how often a progress
	// line is printed when stdout is not a terminal.
	Sample, Progress time.Duration
	Stdout, Stderr   io.Writer
	TTY              bool
}

// Result is what a run measured; `gleaner slurm-demo` prints it and
// writes it as JSON (its keys are documented in docs/slurm-demo.md).
type Result struct {
	Plan PlanSummary `json:"plan"`
	// Slurm or PBS is the cluster as its scheduler described it.
	Slurm    *SlurmSummary `json:"slurm,omitempty"`
	PBS      *PBSSummary   `json:"pbs,omitempty"`
	Baseline *PassResult   `json:"baseline,omitempty"`
	Control  *PassResult   `json:"control,omitempty"`
	Live     *PassResult   `json:"live,omitempty"`
	// Delays compares the batch jobs' starts of the live pass with the
	// baseline's; ControlDelays the control pass's with the baseline's
	// (two passes without Gleaner: the comparison's noise).
	Delays        *Delays `json:"delays,omitempty"`
	ControlDelays *Delays `json:"control_delays,omitempty"`
	// Trials is the campaign's account of its trials and the audit of
	// their runs.
	Trials *TrialsSummary `json:"trials,omitempty"`
	// Sim is the simulator's prediction for the live pass's idle events.
	Sim *SimComparison `json:"sim,omitempty"`
	// Leftovers are processes of the demo still running after it
	// stopped everything (should be empty).
	Leftovers []string `json:"leftovers"`
	Files     Files    `json:"files"`
}

// PlanSummary is the replayed window.
type PlanSummary struct {
	SWF         string  `json:"swf"`
	Offset      string  `json:"offset"`
	TraceStart  int64   `json:"trace_start_unix"`
	Jobs        int     `json:"jobs"`
	Compression float64 `json:"compression"`
	TraceNodes  int     `json:"trace_nodes"`
	Nodes       int     `json:"nodes"`
	SpanS       float64 `json:"span_s"`
	LongestRunS float64 `json:"longest_run_s"`
	Load        float64 `json:"load"`
	TraceLoad   float64 `json:"trace_load"`
	// Sizes counts the replayed jobs by scaled size.
	Sizes map[int]int `json:"sizes"`
}

// SlurmSummary is the cluster as Slurm described it.
type SlurmSummary struct {
	Version    string  `json:"version"`
	GraceS     float64 `json:"grace_s"`
	KillWaitS  float64 `json:"kill_wait_s"`
	BFInterval float64 `json:"bf_interval_s"`
	SignalUser bool    `json:"preempt_send_user_signal"`
}

// PassResult is one pass of the window.
type PassResult struct {
	Kind string `json:"kind"` // "baseline", "control" or "live"
	// Start is when the replay started, End when the pass's measurement
	// ended; Seconds between them.
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	// CutShort: the pass ended (Duration, Ctrl-C) before every job did.
	CutShort    bool         `json:"cut_short,omitempty"`
	Batch       BatchSummary `json:"batch"`
	NodeSeconds NodeSeconds  `json:"node_seconds"`
	Harvest     float64      `json:"harvest"`
	Pilots      PilotSummary `json:"pilots"`
	Churn       Churn        `json:"churn"`
	// Handovers: batch jobs that took a pilot's nodes (a pilot ended on
	// one of their nodes between their submission and their start); per
	// such pilot, how long the job waited for it to end after its
	// submission, and the gap from its end to the job's start.
	Handovers      int           `json:"handovers"`
	HandoverPilots int           `json:"handover_pilots"`
	HandoverWait   stats.Summary `json:"handover_wait_s"`
	HandoverGap    stats.Summary `json:"handover_gap_s"`
	// LateSubmits summarises how late sbatch returned after each job's
	// planned time (seconds).
	LateSubmits stats.Summary `json:"late_submits_s"`
	// Starts are the batch jobs' starts, seconds after Start, by name.
	Starts map[string]float64 `json:"starts"`
	// PilotsLeft counts pilots still pending or running after the worker
	// stopped (it must cancel every one); PilotsCancelled those of them
	// the demo cancelled then (scancel by the pilots' job name).
	PilotsLeft      int `json:"pilots_left"`
	PilotsCancelled int `json:"pilots_cancelled,omitempty"`
}

// Files are what the run wrote.
type Files struct {
	Result     string `json:"result"`
	IdleEvents string `json:"idle_events,omitempty"`
	WorkerLog  string `json:"worker_log,omitempty"`
	ServerLog  string `json:"server_log,omitempty"`
	Data       string `json:"data,omitempty"`
	// Timelines and Jobs are each pass's spans and jobs, by pass.
	Timelines map[string]string `json:"timelines,omitempty"`
	Jobs      map[string]string `json:"jobs,omitempty"`
	// SlurmctldLogs are the controller's logs of each pass (a cluster
	// this command started).
	SlurmctldLogs map[string]string `json:"slurmctld_logs,omitempty"`
}

// demo is one run.
type demo struct {
	s       Settings
	plan    Plan
	cluster Scheduler
	nodes   []string
	info    ClusterInfo
	script  string
	res     Result
	// lastTimeline is the last pass's, for the measurements.
	lastTimeline *Timeline
	// passes is how many passes the run makes.
	passes int
	// lastSubmitted are the last pass's submission times, by job name.
	lastSubmitted map[string]time.Time
	// est is the run's expected length, phase by phase; phase is the one
	// under way, since phaseAt; once halted (ctx ended, at haltedAt) it
	// stays the one the interruption came in. (mu: the interruption
	// comes from another goroutine.)
	mu       sync.Mutex
	est      Estimate
	phase    int
	phaseAt  time.Time
	halted   bool
	haltedAt time.Time
	// stopped is what the teardown stopped or cancelled, for people;
	// written the result file once written.
	stopped []string
	written string
}

// enter starts the estimate's next phase called name.
func (d *demo) enter(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.halted {
		return
	}
	if i := d.est.Index(name, d.phase); i >= 0 {
		d.phase = i
	}
	d.phaseAt = time.Now()
}

// left is the run's expected time left.
func (d *demo) left() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.est.Left(d.phase, time.Since(d.phaseAt))
}

// halt freezes the phase: ctx has ended.
func (d *demo) halt() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.halted, d.haltedAt = true, time.Now()
}

// where is the phase the run was halted in, for people: "the live pass,
// 4 min in".
func (d *demo) where() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.phase >= len(d.est) {
		return "the start"
	}
	return fmt.Sprintf("the %s, %s in", d.est[d.phase].Name, About(max(d.haltedAt.Sub(d.phaseAt), 0)))
}

// cleaned records a teardown step for the interruption's account.
func (d *demo) cleaned(format string, args ...any) {
	d.stopped = append(d.stopped, fmt.Sprintf(format, args...))
}

// Interrupted is Run's error when its context ended (Ctrl-C) before the
// run did: where it was, and what it stopped on its way out.
type Interrupted struct {
	// During is the phase under way: "the live pass, 4 min in".
	During string
	// Stopped is what the teardown stopped or cancelled, in order.
	Stopped []string
	// Left are the demo's processes still running after it (should be
	// none).
	Left []string
	// Result is the file with what was measured ("": none written).
	Result string
	// Err is an error besides the interruption, if one came.
	Err error
}

func (e *Interrupted) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stopped during %s", e.During)
	if len(e.Stopped) == 0 {
		b.WriteString("; nothing had started yet")
	} else {
		fmt.Fprintf(&b, "; cleaned up: %s", strings.Join(e.Stopped, ", "))
	}
	if len(e.Left) == 0 {
		b.WriteString("; nothing of it left running")
	}
	if e.Result != "" {
		fmt.Fprintf(&b, "; what was measured: %s", e.Result)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, "; also: %v", e.Err)
	}
	if len(e.Left) > 0 {
		fmt.Fprintf(&b, "; %d %s left running:\n  %s", len(e.Left), plural(len(e.Left), "process", "processes"), strings.Join(e.Left, "\n  "))
	}
	return b.String()
}

func (e *Interrupted) Unwrap() error { return e.Err }

// sayPass announces a pass with its expected length and the time left.
func (d *demo) sayPass(n int, what string) {
	d.say("pass %d of %d: %s; about %s, about %s left in all", n, max(d.passes, 1), what, About(d.est[d.phase].Took), About(d.left()))
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.s.Stdout, d.s.command()+": "+format+"\n", args...)
}

func (d *demo) warn(format string, args ...any) {
	fmt.Fprintf(d.s.Stderr, d.s.command()+": warning: "+format+"\n", args...)
}

// Run runs the demo: the cluster, the baseline pass (unless given), the
// live pass, the measurements; everything it started is stopped before
// it returns, also when ctx ends (Ctrl-C): then the error is an
// *Interrupted saying where it was and what it stopped, and the result
// holds what was measured.
func Run(ctx context.Context, s Settings) (*Result, error) {
	d := &demo{s: s}
	// The phase stays the one ctx ended in while the teardown goes on.
	stopWatching := context.AfterFunc(ctx, d.halt)
	res, err := d.run(ctx)
	if ctx.Err() == nil {
		stopWatching()
		return res, err
	}
	if stopWatching() { // not run yet
		d.halt()
	}
	in := &Interrupted{Stopped: d.stopped, Left: d.res.Leftovers, Result: d.written}
	if d.res.Leftovers == nil {
		in.Left = leftovers(d.s.Out, d.s.Campaign.Trainer)
	}
	in.During = d.where()
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		in.Err = err
	}
	return res, in
}

func (d *demo) run(ctx context.Context) (res *Result, err error) {
	if err := d.prepare(); err != nil {
		return nil, err
	}
	s := d.s
	d.say("replay: %s", d.plan)
	d.mu.Lock()
	d.est, d.phaseAt = EstimateRun(d.plan, d.s), time.Now()
	d.mu.Unlock()
	d.say("this run takes %s, estimated from its plan; Ctrl-C stops it and everything it started", d.est)

	// The cluster.
	switch {
	case s.PBS != nil:
		d.say("starting (or reusing) the PBS cluster: %s start…", s.PBS.Script)
		if d.cluster, err = StartPBS(ctx, *s.PBS, s.Stderr); err != nil {
			return nil, err
		}
		d.say("using the PBS cluster of %s (it is left running, drained of this run's jobs)", s.PBS.Exec)
	case s.SlurmConf != "":
		d.cluster = UseCluster(s.SlurmConf)
		d.say("using the running cluster of %s", s.SlurmConf)
	default:
		d.say("starting a Slurm cluster of %d nodes in %s (GraceTime %v, bf_interval %v, preempt_send_user_signal %s)…",
			s.Cluster.Nodes, s.Cluster.Dir, s.Cluster.Grace, s.Cluster.BackfillInterval, onOff(s.Cluster.SignalUser))
		if d.cluster, err = StartCluster(ctx, s.Cluster, s.Stderr); err != nil {
			if ctx.Err() != nil { // StartCluster stopped what it had started
				d.cleaned("the Slurm cluster it was starting in %s", s.Cluster.Dir)
			}
			return nil, err
		}
	}
	defer func() {
		if !d.cluster.Started() && ctx.Err() != nil {
			// A running cluster stays, without the demo's jobs.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			n, derr := d.cluster.Drain(dctx, "", time.Minute)
			cancel()
			if derr != nil {
				d.warn("cancelling the jobs left in %s: %v", d.cluster.Name(), derr)
			}
			if n > 0 {
				d.cleaned("%d %s left in the running cluster", n, plural(n, "job", "jobs"))
			}
		}
		if serr := d.cluster.Stop(s.Stderr); serr != nil {
			d.warn("%v", serr)
			if err == nil {
				err = serr
			}
		} else if d.cluster.Started() {
			d.say("Slurm cluster stopped")
			d.cleaned("the Slurm cluster (its jobs, its daemons, %s)", s.Cluster.Dir)
		}
		d.res.Leftovers = leftovers(d.s.Out, d.s.Campaign.Trainer)
		if len(d.res.Leftovers) > 0 {
			d.warn("%d %s left running:\n  %s", len(d.res.Leftovers), plural(len(d.res.Leftovers), "process", "processes"), strings.Join(d.res.Leftovers, "\n  "))
		}
		if werr := d.write(); werr != nil {
			if err == nil {
				err = werr
			}
		} else {
			d.written = d.res.Files.Result
		}
	}()
	if err := d.describe(ctx); err != nil {
		return &d.res, err
	}

	// The baseline pass: the window without Gleaner.
	switch {
	case s.BaselineFrom != "":
		if err := d.loadBaseline(); err != nil {
			return &d.res, err
		}
	case s.Baseline:
		d.passes = 2
		if s.Control {
			d.passes = 3
		}
		d.enter("baseline pass")
		d.sayPass(1, "the window without Gleaner (baseline)")
		p, err := d.pass(ctx, nil, "baseline")
		d.res.Baseline = p
		if err != nil || ctx.Err() != nil {
			return &d.res, err
		}
		d.say("baseline done: %d/%d jobs ran in %v", p.Batch.Started, p.Batch.Planned, time.Duration(p.Seconds*float64(time.Second)).Round(time.Second))
		if err := d.fresh(ctx); err != nil {
			return &d.res, err
		}
		if s.Control {
			d.enter("control pass")
			d.sayPass(2, "the window without Gleaner again (control: how much starts move between identical passes)")
			p, err := d.pass(ctx, nil, "control")
			d.res.Control = p
			if err != nil || ctx.Err() != nil {
				return &d.res, err
			}
			bound := d.info.Grace + d.info.PlanInterval
			cd := CompareStarts(d.res.Baseline.Starts, p.Starts, bound)
			d.res.ControlDelays = &cd
			if err := d.fresh(ctx); err != nil {
				return &d.res, err
			}
		}
	}

	// The live pass: the same window with Gleaner harvesting the holes.
	if err := d.live(ctx); err != nil || ctx.Err() != nil {
		return &d.res, err
	}
	if b := d.res.Baseline; b != nil && d.res.Live != nil {
		bound := d.info.Grace + d.info.PlanInterval
		delays := CompareStarts(b.Starts, d.res.Live.Starts, bound)
		if d.lastTimeline != nil {
			pre, _, _ := Handovers(d.lastTimeline, d.lastSubmitted)
			for i := range delays.Worst {
				delays.Worst[i].Preempted = pre[delays.Worst[i].Name]
			}
		}
		d.res.Delays = &delays
	}
	return &d.res, nil
}

// fresh gives the next pass a cluster like the first's: a restarted one
// (a fresh controller, job ids from 1), or the running one drained.
func (d *demo) fresh(ctx context.Context) error {
	if d.cluster.Started() {
		d.enter("cluster restart")
		d.say("restarting the cluster for the next pass (a fresh controller, as for the first)…")
	}
	return d.cluster.Fresh(ctx, d.s.Stderr)
}

// command is the demo's command, for people: slurm-demo or pbs-demo.
func (s Settings) command() string {
	if s.PBS != nil {
		return "pbs-demo"
	}
	return "slurm-demo"
}

// prepare checks the settings and builds the plan.
func (d *demo) prepare() error {
	s := &d.s
	if s.Stdout == nil {
		s.Stdout = io.Discard
	}
	if s.Stderr == nil {
		s.Stderr = io.Discard
	}
	if s.BatchPartition == "" {
		s.BatchPartition = "batch"
		if s.PBS != nil {
			s.BatchPartition = "workq"
		}
	}
	if s.PilotPartition == "" {
		s.PilotPartition = "glean"
		if s.PBS != nil {
			s.PilotPartition = "gleaner"
		}
	}
	if s.Sample <= 0 {
		s.Sample = time.Second
	}
	if s.Progress <= 0 {
		s.Progress = 5 * time.Second
	}
	out, err := filepath.Abs(s.Out)
	if err != nil {
		return err
	}
	s.Out = out
	if err := os.MkdirAll(s.Out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	d.res.Files.Result = filepath.Join(s.Out, "result.json")
	f, err := data.Open(s.SWF) // a file, or a built-in log (data.Prefix)
	if err != nil {
		return fmt.Errorf("--swf: %w", err)
	}
	defer f.Close()
	log, err := ReadSWF(f)
	if err != nil {
		return fmt.Errorf("--swf %s: %w", s.SWF, err)
	}
	if d.plan, err = NewPlan(log, s.Plan); err != nil {
		return fmt.Errorf("--swf %s: %w", s.SWF, err)
	}
	p := d.plan
	d.res.Plan = PlanSummary{SWF: s.SWF, Offset: p.Settings.Offset.String(), TraceStart: p.TraceStart, Jobs: len(p.Jobs),
		Compression: p.Settings.Compression, TraceNodes: p.Settings.TraceNodes, Nodes: p.Settings.ClusterNodes,
		SpanS: p.Span.Seconds(), LongestRunS: p.LongestRun.Seconds(), Load: p.Load, TraceLoad: p.TraceLoad, Sizes: map[int]int{}}
	for _, j := range p.Jobs {
		d.res.Plan.Sizes[j.Nodes]++
	}
	if d.script, err = WriteJobScript(filepath.Join(s.Out, "batch")); err != nil {
		return err
	}
	return nil
}

// describe reads the cluster's nodes and configuration.
func (d *demo) describe(ctx context.Context) error {
	var err error
	if d.nodes, err = d.cluster.Nodes(ctx); err != nil {
		return fmt.Errorf("the cluster's nodes: %w", err)
	}
	if len(d.nodes) != d.s.Plan.ClusterNodes {
		return fmt.Errorf("the cluster has %d nodes, the plan was made for %d", len(d.nodes), d.s.Plan.ClusterNodes)
	}
	if d.info, err = d.cluster.Describe(ctx, d.s.PilotPartition); err != nil {
		return fmt.Errorf("the cluster's configuration: %w", err)
	}
	d.res.Slurm, d.res.PBS = d.info.Slurm, d.info.PBS
	d.say("cluster: %s, nodes %s, %s", d.info.Version, strings.Join(d.nodes, " "), d.info.Line)
	return nil
}

// passHooks are what the live pass adds to a pass: the pool for the
// monitor, and trials done for the progress line.
type passHooks struct {
	pool       func(ctx context.Context) (*PoolView, error)
	trialsDone func(ctx context.Context) int
}

// pass replays the window once and monitors it until every job ended (or
// the pass's time is up, or ctx ends).
func (d *demo) pass(ctx context.Context, hooks *passHooks, kind string) (*PassResult, error) {
	tl := NewTimeline(d.nodes, d.s.BatchPartition, d.s.PilotPartition)
	tl.PilotLimit = d.s.PilotTime
	// The worker's default lead (pilot.Settings.Lead): GraceTime, at least 30 s.
	// (PBS's lead is the queue's kill_delay, at least 30 s, alike.)
	tl.PilotLead = max(d.info.Grace, 30*time.Second)
	tl.Replayed = map[string]bool{}
	for _, j := range d.plan.Jobs {
		tl.Replayed[j.Name] = true
	}
	mon := &Monitor{Timeline: tl, Jobs: d.cluster, Interval: d.s.Sample}
	if hooks != nil {
		mon.Pool = hooks.pool
	}
	limit := d.s.Duration
	if limit <= 0 {
		limit = d.plan.Span + d.plan.LongestRun + 10*time.Minute
	}
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	rep := &Replayer{Submitter: d.cluster, Partition: d.s.BatchPartition, Script: d.script}
	start := time.Now()
	var (
		mu        sync.Mutex
		submitted []Submitted
		replayErr error
		replayed  = make(chan struct{})
	)
	go func() {
		defer close(replayed)
		subs, err := rep.Replay(pctx, start, d.plan.Jobs, nil)
		mu.Lock()
		submitted, replayErr = subs, err
		mu.Unlock()
	}()
	isReplayed := func() bool {
		select {
		case <-replayed:
			return true
		default:
			return false
		}
	}
	done := func() bool {
		if !isReplayed() {
			return false
		}
		for _, j := range d.plan.Jobs {
			if r := tl.Batch[j.Name]; r == nil || !r.Ended {
				return false
			}
		}
		return true
	}
	var (
		lastLine   time.Time
		trialsDone = -1
		lastTrials time.Time
		sampleErrs int
	)
	report := func(s Snapshot, held []Holder, err error) {
		if err != nil {
			sampleErrs++
			if sampleErrs <= 3 {
				d.warn("%v", err)
			}
			return
		}
		if hooks != nil && time.Since(lastTrials) >= 5*time.Second {
			if n := hooks.trialsDone(pctx); n >= 0 {
				trialsDone = n
			} else if trialsDone < 0 {
				trialsDone = 0
			}
			lastTrials = time.Now()
		}
		if !d.s.TTY && time.Since(lastLine) < d.s.Progress {
			return
		}
		lastLine = time.Now()
		line := ProgressLine(time.Since(start), held, tl.Counts(), len(d.plan.Jobs), trialsDone, d.left())
		if d.s.TTY {
			fmt.Fprintf(d.s.Stdout, "\r\x1b[K\x1b[?7l%s\x1b[?7h", line)
		} else {
			fmt.Fprintln(d.s.Stdout, line)
		}
	}
	if d.s.TTY {
		d.say("node map: B batch job, T trial (on a pilot), P pilot without a trial, . free")
	} else {
		d.say("node map: B batch job, T trial (on a pilot), P pilot without a trial, . free; a line every %v", d.s.Progress)
	}
	loopErr := mon.Loop(pctx, done, report)
	if d.s.TTY {
		fmt.Fprintln(d.s.Stdout)
	}
	end := time.Now()
	tl.Close(end)
	cancel()
	<-replayed

	p := &PassResult{Kind: kind, Start: start, End: end, Seconds: end.Sub(start).Seconds(), CutShort: !done()}
	p.Batch = SummariseBatch(tl, d.plan.Jobs)
	p.NodeSeconds = HolderShares(tl, start, end)
	p.Harvest = p.NodeSeconds.Harvest()
	p.Pilots = SummarisePilots(tl)
	p.Churn = MeasureChurn(tl, start, end)
	p.Starts = BatchStarts(tl, start)
	subAt := map[string]time.Time{}
	for _, s := range submitted {
		subAt[s.Job.Name] = s.At
	}
	d.lastSubmitted = subAt
	if hooks != nil {
		pre, waited, gaps := Handovers(tl, subAt)
		p.Handovers, p.HandoverPilots, p.HandoverWait, p.HandoverGap = len(pre), len(gaps), stats.Summarize(waited), stats.Summarize(gaps)
	}
	late := make([]float64, len(submitted))
	for i, s := range submitted {
		late[i] = s.Late.Seconds()
	}
	p.LateSubmits = stats.Summarize(late)
	d.lastTimeline = tl
	d.writeTimeline(kind, tl)
	if log := filepath.Join(d.s.Out, kind+"-slurmctld.log"); d.cluster.SaveLog(log) {
		if d.res.Files.SlurmctldLogs == nil {
			d.res.Files.SlurmctldLogs = map[string]string{}
		}
		d.res.Files.SlurmctldLogs[kind] = log
	}
	if foreign := tl.Foreign(); len(foreign) > 0 {
		d.warn("%s pass: %d jobs not of the replay ran in %s (%s): someone else's; not counted, but the nodes they held count as batch",
			kind, len(foreign), d.s.BatchPartition, strings.Join(foreign, ", "))
	}
	if p.CutShort && ctx.Err() == nil {
		d.warn("%s pass cut short after %v: %d of %d jobs ended", kind, end.Sub(start).Round(time.Second), p.Batch.Ended, p.Batch.Planned)
	}
	if replayErr != nil && !errors.Is(replayErr, context.Canceled) && !errors.Is(replayErr, context.DeadlineExceeded) {
		return p, fmt.Errorf("%s pass: replay: %w", kind, replayErr)
	}
	if loopErr != nil && !errors.Is(loopErr, context.Canceled) && !errors.Is(loopErr, context.DeadlineExceeded) {
		return p, fmt.Errorf("%s pass: monitor: %w", kind, loopErr)
	}
	return p, nil
}

// loadBaseline reads the baseline pass of an earlier result file, made
// for the same plan.
func (d *demo) loadBaseline() error {
	b, err := os.ReadFile(d.s.BaselineFrom)
	if err != nil {
		return fmt.Errorf("--baseline-from: %w", err)
	}
	var old Result
	if err := json.Unmarshal(b, &old); err != nil {
		return fmt.Errorf("--baseline-from %s: %w", d.s.BaselineFrom, err)
	}
	switch {
	case old.Baseline == nil:
		return fmt.Errorf("--baseline-from %s: it holds no baseline pass", d.s.BaselineFrom)
	case old.Plan.TraceStart != d.res.Plan.TraceStart || old.Plan.Jobs != d.res.Plan.Jobs ||
		old.Plan.Compression != d.res.Plan.Compression || old.Plan.Nodes != d.res.Plan.Nodes:
		return fmt.Errorf("--baseline-from %s: made for another window (%d jobs from unix %d, %v×, %d nodes)",
			d.s.BaselineFrom, old.Plan.Jobs, old.Plan.TraceStart, old.Plan.Compression, old.Plan.Nodes)
	}
	d.res.Baseline, d.res.Control, d.res.ControlDelays = old.Baseline, old.Control, old.ControlDelays
	d.say("baseline pass from %s (%d jobs ran)", d.s.BaselineFrom, old.Baseline.Batch.Started)
	return nil
}

// writeTimeline writes a pass's spans and jobs as CSV.
func (d *demo) writeTimeline(kind string, tl *Timeline) {
	if d.res.Files.Timelines == nil {
		d.res.Files.Timelines, d.res.Files.Jobs = map[string]string{}, map[string]string{}
	}
	for _, f := range []struct {
		path  string
		write func(io.Writer) error
		into  map[string]string
	}{
		{filepath.Join(d.s.Out, kind+"-timeline.csv"), tl.WriteSpans, d.res.Files.Timelines},
		{filepath.Join(d.s.Out, kind+"-jobs.csv"), tl.WriteJobs, d.res.Files.Jobs},
	} {
		out, err := os.Create(f.path)
		if err == nil {
			err = f.write(out)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			d.warn("%v", err)
			continue
		}
		f.into[kind] = f.path
	}
}

// write writes the result as JSON.
func (d *demo) write() error {
	b, err := json.MarshalIndent(d.res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(d.res.Files.Result, append(b, '\n'), 0o644)
}
