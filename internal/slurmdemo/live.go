package slurmdemo

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	tlog "go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/sim"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// CampaignSettings are the HPO campaign the pilots' nodes train: the
// example trainer (examples/go-mlp) on one node per trial, paced by
// StepMS so that it stays light (one thread, mostly asleep).
type CampaignSettings struct {
	// Trainer is the example trainer's absolute path.
	Trainer            string
	Trials, Concurrent int
	// Steps, Batch, StepMS, ReportEvery and CheckpointEvery are the
	// trainer's parameters (a trial's budget is Steps × Batch samples).
	Steps, Batch, StepMS, ReportEvery, CheckpointEvery int
	MaxNodes                                           int
	// Grace is the trials' grace_period: it must fit in GraceTime.
	Grace time.Duration
}

// Budget is one trial's samples.
func (c CampaignSettings) Budget() float64 { return float64(c.Steps * c.Batch) }

// CheckpointSamples are the samples between two periodic checkpoints.
func (c CampaignSettings) CheckpointSamples() float64 { return float64(c.CheckpointEvery * c.Batch) }

// Spec is the campaign: a random search over the learning rate and the
// hidden width.
func (c CampaignSettings) Spec(name, pool string) gleaner.CampaignSpec {
	fixed := func(n string, v int) hpo.Param {
		return hpo.Param{Name: n, Type: hpo.ParamChoice, Choices: []string{strconv.Itoa(v)}}
	}
	return gleaner.CampaignSpec{
		Name:    name,
		Pool:    pool,
		Command: []string{c.Trainer},
		Space: hpo.Space{
			{Name: "lr", Type: hpo.ParamFloat, Min: 0.01, Max: 0.5, Log: true},
			{Name: "hidden", Type: hpo.ParamInt, Min: 4, Max: 32, Log: true},
			fixed("batch", c.Batch), fixed("steps", c.Steps), fixed("step_ms", c.StepMS),
			fixed("report_every", c.ReportEvery), fixed("checkpoint_every", c.CheckpointEvery),
		},
		Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"},
		Budget:    gleaner.Budget{MaxTrials: c.Trials, MaxConcurrent: c.Concurrent},
		Resources: gleaner.Resources{MinNodes: 1, MaxNodes: c.MaxNodes},
		Trial:     gleaner.TrialPolicy{GracePeriod: gleaner.Duration(c.Grace), MaxRestarts: 3},
	}
}

// TrialsSummary is the campaign's account of its trials at the end of
// the live pass, and the audit of every run's reports.
type TrialsSummary struct {
	Campaign string `json:"campaign"`
	// The campaign's counts.
	Created   int `json:"created"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Stopped   int `json:"stopped"`
	// States counts the trial workflows by state.
	States map[string]int `json:"states"`
	// Restarts and Killed sum the trials' relaunches after failures and
	// runs SIGKILLed after their grace period.
	Restarts int `json:"restarts"`
	Killed   int `json:"killed"`
	// Lost: trials failed, or resumed from before a checkpoint they had.
	// CompletedTwice: trials with two runs that trained to the budget, or
	// trained past it, or two runs at once.
	Lost           int   `json:"lost"`
	CompletedTwice int   `json:"completed_twice"`
	Audit          Audit `json:"audit"`
	// Worst are the stops that lost the most training.
	Worst []StopLoss `json:"worst_stops,omitempty"`
}

// SimComparison is the simulator fed the live pass's idle events with a
// workload like the campaign's, against what the live pass measured.
type SimComparison struct {
	Workload SimWorkload `json:"workload"`
	// Raw: the idle events as they were. Lagged: every hole that opened
	// during the pass starts LagS later (the median time the live pass
	// took from a node falling idle to a trial holding it).
	Raw    SimPrediction `json:"raw"`
	Lagged SimPrediction `json:"lagged"`
	LagS   float64       `json:"lag_s"`
	// QueueGapNodeS are the idle node-seconds of queue gaps (QueueGaps:
	// a node waiting for a batch job already queued), OfferedNodeS the
	// rest. Offered is the simulator on the offered holes only, lagged
	// like Lagged; its harvest, like LiveOfferedHarvest (trial
	// node-seconds inside the offered holes), is over OfferedNodeS.
	QueueGaps          int           `json:"queue_gaps"`
	QueueGapNodeS      float64       `json:"queue_gap_node_s"`
	OfferedNodeS       float64       `json:"offered_node_s"`
	Offered            SimPrediction `json:"offered"`
	LiveOfferedHarvest float64       `json:"live_offered_harvest"`
	// Live harvest and efficiency vs dedicated: the useful samples
	// trained in the pass at the dedicated rate, over the node-seconds
	// trials held.
	LiveHarvest    float64 `json:"live_harvest"`
	LiveEfficiency float64 `json:"live_efficiency"`
	LiveSamples    float64 `json:"live_samples"`
}

// SimPrediction is one simulated run's harvest and efficiency.
type SimPrediction struct {
	Harvest        float64 `json:"harvest"`
	Efficiency     float64 `json:"efficiency"`
	IdleNodeS      float64 `json:"idle_node_s"`
	AllocatedNodeS float64 `json:"allocated_node_s"`
	Preemptions    int     `json:"preemptions"`
	JobsCompleted  int     `json:"jobs_completed"`
	Error          string  `json:"error,omitempty"`
}

// live runs the pass with Gleaner: a dev server, a worker process whose
// pilots harvest the cluster, the campaign; then stops them in order and
// measures.
func (d *demo) live(ctx context.Context) error {
	s := d.s
	d.enter("Gleaner start-up and warm-up")
	serverLog := filepath.Join(s.Out, "temporal.log")
	lf, err := os.Create(serverLog)
	if err != nil {
		return err
	}
	defer lf.Close()
	d.res.Files.ServerLog = serverLog
	quiet := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(s.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	d.say("starting a Temporal dev server (in memory; its log in %s)…", serverLog)
	srv, err := devserver.Start(ctx, devserver.Options{Output: lf, Logger: quiet})
	if err != nil {
		return fmt.Errorf("starting the Temporal dev server: %w", err)
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			d.warn("stopping the dev server: %v", err)
		}
		d.say("Temporal dev server stopped")
		d.cleaned("the Temporal dev server")
	}()

	data := filepath.Join(s.Out, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	d.res.Files.Data = data
	taskQueue := s.command()
	nodes := d.cluster.NodeSource(s)
	argv := []string{s.Gleaner, "worker", "--address", srv.Address(), "--namespace", srv.Namespace(), "--task-queue", taskQueue,
		"--data-dir", data, "--nodes", nodes, "--stop-timeout", "30s", "--log-level", "warn"}
	workerLog := filepath.Join(s.Out, "worker.log")
	d.res.Files.WorkerLog = workerLog
	_ = os.Remove(workerLog)
	d.say("starting the worker: %s (its log in %s)", strings.Join(argv[1:], " "), workerLog)
	w, err := StartProcess("gleaner worker", argv, d.cluster.Env(), workerLog)
	if err != nil {
		return err
	}
	// Stopping the worker: it cancels every pilot; then the demo counts
	// the pilots still pending or running and cancels them itself (a
	// worker stopped while it cancels may leave some).
	var (
		workerStopped               bool
		pilotsLeft, pilotsCancelled int
	)
	stopWorker := func() {
		if workerStopped {
			return
		}
		workerStopped = true
		d.say("stopping the worker: it cancels every pilot, whose agents' trainers checkpoint…")
		if err := w.Stop(90 * time.Second); err != nil {
			d.warn("worker: %v", err)
		}
		d.cleaned("the gleaner worker")
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		pilotsLeft = d.pilotsLeft(cctx)
		pilotsCancelled = d.cancelPilots(cctx, pilotsLeft)
	}
	defer stopWorker()

	c := client.New(srv.Client(), client.Options{TaskQueue: taskQueue, Namespace: srv.Namespace()})
	name := s.command() + "-" + time.Now().Format("150405")
	spec := s.Campaign.Spec(name, s.Pool)
	camp, err := c.Submit(ctx, spec)
	if err != nil {
		return fmt.Errorf("submitting the campaign: %w", err)
	}
	d.say("campaign %s: %d trials of %d samples (%d steps of %d, one every %d ms; checkpoint every %d steps), %d at a time on 1–%d nodes, grace_period %v",
		camp.Name, s.Campaign.Trials, int(s.Campaign.Budget()), s.Campaign.Steps, s.Campaign.Batch, s.Campaign.StepMS,
		s.Campaign.CheckpointEvery, s.Campaign.Concurrent, s.Campaign.MaxNodes, s.Campaign.Grace)

	view := func(ctx context.Context) (*PoolView, error) {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		st, err := c.PoolStatus(qctx, s.Pool)
		if err != nil {
			return nil, err
		}
		return poolView(st), nil
	}
	if err := d.warmup(ctx, view, w); err != nil || ctx.Err() != nil {
		return err
	}

	hooks := &passHooks{pool: view, trialsDone: func(ctx context.Context) int {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		st, err := c.Status(qctx, camp.Name)
		if err != nil {
			return -1
		}
		return st.Completed
	}}
	d.enter("live pass")
	d.sayPass(max(d.passes, 1), "the window with Gleaner harvesting its holes")
	p, passErr := d.pass(ctx, hooks, "live")
	d.res.Live = p
	d.enter("teardown and measurements")

	// The campaign's account, while the server is up.
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	sum := &TrialsSummary{Campaign: camp.Name, States: map[string]int{}}
	if st, err := c.Status(tctx, camp.Name); err == nil {
		sum.Created, sum.Completed, sum.Failed, sum.Stopped = st.Created, st.Completed, st.Failed, st.Stopped
	} else {
		d.warn("campaign status: %v", err)
	}
	if trials, err := c.Trials(tctx, camp.Name); err == nil {
		for _, t := range trials {
			sum.States[string(t.State)]++
			sum.Restarts += t.Restarts
			sum.Killed += t.Killed
		}
	} else {
		d.warn("trials: %v", err)
	}

	// Stop the worker (it cancels every pilot); count what it left.
	stopWorker()
	if p != nil {
		p.PilotsLeft, p.PilotsCancelled = pilotsLeft, pilotsCancelled
		if b, err := os.ReadFile(workerLog); err == nil {
			p.Pilots.Yielded = CountYields(b, strings.ToLower(d.cluster.Name()))
		}
	}
	n, err := d.cluster.Drain(tctx, "", time.Minute)
	if err != nil {
		d.warn("cancelling what is left in %s: %v", d.cluster.Name(), err)
	}
	if n > 0 {
		d.cleaned("%d %s left in %s", n, plural(n, "job", "jobs"), d.cluster.Name())
	}

	if p != nil {
		d.measure(sum, p)
	}
	return passErr
}

// warmup waits until the campaign's trials hold as many nodes as they
// can (or Warmup is up), so the pass starts with Gleaner at work.
func (d *demo) warmup(ctx context.Context, view func(context.Context) (*PoolView, error), w *Process) error {
	want := min(len(d.nodes), d.s.Campaign.Concurrent*d.s.Campaign.MaxNodes)
	deadline := time.Now().Add(d.s.Warmup)
	start := time.Now()
	var last time.Time
	for {
		if exited, err := w.Exited(); exited {
			return fmt.Errorf("the worker exited (%v); its log: %s", err, w.Log)
		}
		held := 0
		if v, err := view(ctx); err == nil {
			held = len(v.TrialOf)
		}
		if held >= want {
			d.say("warm: trials hold %d of %d nodes after %v", held, len(d.nodes), time.Since(start).Round(time.Second))
			return nil
		}
		if time.Now().After(deadline) {
			d.warn("after %v trials hold %d of %d nodes; starting the replay anyway", d.s.Warmup, held, len(d.nodes))
			return nil
		}
		if time.Since(last) >= 5*time.Second {
			d.say("warming up: trials hold %d of %d nodes… (about %s left in all)", held, want, About(d.left()))
			last = time.Now()
		}
		if err := (WallClock{}).Sleep(ctx, time.Second); err != nil {
			return nil
		}
	}
}

// poolView is what the monitor needs of a pool's status.
func poolView(st workflows.PoolStatus) *PoolView {
	v := &PoolView{TrialOf: map[string]string{}}
	for _, a := range st.Agents {
		v.Agents = append(v.Agents, a.Agent)
	}
	for _, t := range st.Trials {
		for _, n := range t.Nodes {
			v.TrialOf[n] = t.Registration.TrialID
		}
	}
	return v
}

// pilotsLeft counts the pilots still pending or running (not ending)
// once those ending have had up to a minute to go.
func (d *demo) pilotsLeft(ctx context.Context) int {
	deadline := time.Now().Add(time.Minute)
	for {
		tl := NewTimeline(d.nodes, d.s.BatchPartition, d.s.PilotPartition)
		mon := &Monitor{Timeline: tl, Jobs: d.cluster}
		if _, _, err := mon.Sample(ctx); err != nil {
			d.warn("counting pilots left: %v", err)
			return -1
		}
		left, ending := 0, 0
		for _, j := range tl.Pilots {
			switch {
			case j.State == "PENDING" || j.State == "RUNNING" || j.State == "CONFIGURING":
				left++
			case Active(j.State):
				ending++
			}
		}
		if ending == 0 || time.Now().After(deadline) {
			return left
		}
		if err := (WallClock{}).Sleep(ctx, 500*time.Millisecond); err != nil {
			return left
		}
	}
}

// cancelPilots cancels the pilots the worker left (left of them; < 0:
// not counted) by their job name, says so, and returns how many it
// cancelled (-1: not counted).
func (d *demo) cancelPilots(ctx context.Context, left int) int {
	if left == 0 {
		return 0
	}
	what := fmt.Sprintf("%d %s the worker left", left, plural(left, "pilot", "pilots"))
	if left < 0 {
		what = "the pilots the worker may have left"
	}
	cmd, err := d.cluster.CancelPilots(ctx, d.s.Pool, d.s.PilotPartition)
	if err != nil {
		d.warn("cancelling %s (%s): %v", what, cmd, err)
		return 0
	}
	d.say("cancelled %s: %s", what, cmd)
	d.cleaned("%s (%s)", what, cmd)
	return left
}

// measure audits the trials and compares the live pass with the
// simulator.
func (d *demo) measure(sum *TrialsSummary, p *PassResult) {
	s := d.s
	audit, err := AuditCampaign(filepath.Join(d.res.Files.Data, sum.Campaign), s.Campaign.Budget(), s.Campaign.CheckpointSamples())
	if err != nil {
		d.warn("%v", err)
	}
	sum.Audit = audit
	sum.Worst = audit.Worst(5)
	sum.Lost = sum.Failed + audit.Regressed
	sum.CompletedTwice = audit.FinishedTwice + audit.Overlapping
	d.res.Trials = sum

	tl := d.lastTimeline
	holes := IdleHoles(tl, p.Start, p.End)
	eventsFile := filepath.Join(s.Out, "idle-events.csv")
	from, to := unixSeconds(p.Start), unixSeconds(p.End)
	if f, err := os.Create(eventsFile); err == nil {
		comment := fmt.Sprintf("gleaner "+s.command()+": the live pass's idle nodes (no batch job on them), sampled every %v\n%d jobs of %s from unix %d, %v× faster, on %d nodes; window %.3f..%.3f",
			s.Sample, len(d.plan.Jobs), filepath.Base(s.SWF), d.plan.TraceStart, d.plan.Settings.Compression, len(d.nodes), from, to)
		if err := WriteIdleEvents(f, len(d.nodes), HoleEvents(holes), comment); err != nil {
			d.warn("idle events: %v", err)
		}
		f.Close()
		d.res.Files.IdleEvents = eventsFile
	}

	cmp := &SimComparison{LiveHarvest: p.Harvest}
	cmp.LiveSamples = audit.SamplesIn(p.Start, p.End)
	if audit.Rate > 0 && p.NodeSeconds.Trial > 0 {
		cmp.LiveEfficiency = cmp.LiveSamples / audit.Rate / p.NodeSeconds.Trial
	}
	lostSecs := 0.0
	if audit.Rate > 0 {
		lostSecs = audit.LostPerStop.Mean / audit.Rate
	}
	cmp.Workload = SimWorkload{
		Jobs: 2*audit.Started + s.Campaign.Concurrent, Samples: s.Campaign.Budget(), Rate: audit.Rate,
		MinNodes: 1, MaxNodes: s.Campaign.MaxNodes, RescaleUp: lostSecs, RescaleDown: lostSecs,
	}
	if cmp.Workload.Rate <= 0 {
		cmp.Workload.Rate = 1 // no run long enough to measure: the harvest is still predicted
	}
	cmp.LagS = p.Churn.IdleToTrial.P50
	predict := func(h []sim.Hole) SimPrediction {
		m, err := Predict(h, from, to, cmp.Workload)
		if err != nil {
			return SimPrediction{Error: err.Error()}
		}
		return SimPrediction{Harvest: m.HoleUtilisation, Efficiency: m.EfficiencyVsDedicated, IdleNodeS: m.IdleNodeSeconds,
			AllocatedNodeS: m.AllocatedNodeSeconds, Preemptions: m.Preemptions, JobsCompleted: m.JobsCompleted}
	}
	d.say("simulating the same idle events (%d holes) with %d jobs like the campaign's…", len(holes), cmp.Workload.Jobs)
	cmp.Raw = predict(holes)
	cmp.Lagged = predict(ShiftHoles(holes, from, time.Duration(cmp.LagS*float64(time.Second))))
	// Against the same idle node-seconds as the live pass: the lag makes
	// the holes the simulator sees shorter, not the idle time.
	cmp.Lagged.Harvest = ratio(cmp.Lagged.AllocatedNodeS, cmp.Raw.IdleNodeS)
	offered, gaps := QueueGaps(tl, holes, d.lastSubmitted)
	cmp.QueueGaps, cmp.QueueGapNodeS, cmp.OfferedNodeS = len(gaps), NodeSecondsOf(gaps), NodeSecondsOf(offered)
	cmp.LiveOfferedHarvest = ratio(HeldIn(tl, offered, Trial), cmp.OfferedNodeS)
	cmp.Offered = predict(ShiftHoles(offered, from, time.Duration(cmp.LagS*float64(time.Second))))
	cmp.Offered.Harvest = ratio(cmp.Offered.AllocatedNodeS, cmp.OfferedNodeS)
	d.res.Sim = cmp
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// leftovers lists processes other than this one and its ancestors whose
// command line or environment names dir: agents, trainers or a worker the
// demo started and did not stop.
func leftovers(dir, trainer string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	mine := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !mine[pid]; pid = parentOf(pid) {
		mine[pid] = true
	}
	var out []string
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || mine[pid] {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		environ, _ := os.ReadFile(filepath.Join(p, "environ"))
		cl := strings.ReplaceAll(string(cmdline), "\x00", " ")
		mentions := strings.Contains(cl, dir) || strings.Contains(string(environ), dir)
		if trainer != "" && strings.HasPrefix(cl, trainer) && strings.Contains(string(environ), dir) {
			mentions = true
		}
		if mentions {
			out = append(out, fmt.Sprintf("%d %s", pid, strings.TrimSpace(cl)))
		}
	}
	return out
}

// parentOf is pid's parent (0 when unknown).
func parentOf(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces, so cut after its ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
