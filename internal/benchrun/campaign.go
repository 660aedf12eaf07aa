package benchrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/activities"
	gclient "github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Ray Tune's published figure for its own overhead: 10,000 trials of one
// second each in 715 s on 16 CPUs.
const (
	RayTuneTrials  = 10_000
	RayTuneSeconds = 715.0
	RayTuneCPUs    = 16
)

// CampaignOptions configure RunCampaign.
type CampaignOptions struct {
	Trials     int     // trials in the campaign
	Concurrent int     // max_concurrent
	Seconds    float64 // about how long one trial trains
	Nodes      int     // CPU slots of the static node source
	// Steps is the trainer's step count per trial (default 20); each step
	// sleeps Seconds/Steps.
	Steps int
	// ProgressEvery is how often a progress line goes to Log (default 5 s).
	ProgressEvery time.Duration
	RepoDir       string
	Log           io.Writer
	// ServerConfig are dynamic config values (KEY=VALUE) for the dev server.
	ServerConfig []string
	// ServerLog, when set, receives the dev server's output (appended).
	ServerLog string
	// Inline runs the trials inline (spec trial.inline): activities of the
	// campaign's workflow, not workflows of their own.
	Inline bool
	// VsOptuna runs the same campaign through Optuna afterwards
	// (scripts/campaign_optuna.py with Python, default /usr/bin/python3).
	VsOptuna bool
	Python   string
	// VsFloor runs the same trials at Temporal's floor afterwards (on a
	// dev server of its own, floor.go): what an activity per trial
	// (Inline) or a workflow per trial costs on this machine with nothing
	// of Gleaner's.
	VsFloor bool
}

// CampaignReport is RunCampaign's result; its JSON keys are a stable
// contract.
type CampaignReport struct {
	Trials       int     `json:"trials"`
	Concurrent   int     `json:"concurrent"`
	Nodes        int     `json:"nodes"`
	TrialSeconds float64 `json:"trial_seconds"`
	Steps        int     `json:"steps"`
	StepMS       float64 `json:"step_ms"`
	CPUs         int     `json:"cpus"`
	// ServerConfig are the dev server's dynamic config overrides.
	ServerConfig []string `json:"server_config"`
	// Inline: the trials ran inline (trial.inline).
	Inline bool `json:"inline,omitempty"`

	State     string `json:"state"`
	Completed int    `json:"completed"`
	Stopped   int    `json:"stopped"`
	Failed    int    `json:"failed"`

	WallSeconds            float64 `json:"wall_seconds"`
	TrialsPerSecond        float64 `json:"trials_per_second"`
	TrialsPerSecondPerCore float64 `json:"trials_per_second_per_core"`
	// TrialWallSeconds is each trial workflow's start→close time.
	TrialWallSeconds Stats `json:"trial_wall_seconds"`

	// EventsPerTrial is the history length of every trial workflow.
	EventsPerTrial Stats `json:"events_per_trial"`
	// TrialPhases is where the trial workflows' time goes.
	TrialPhases TrialPhases `json:"trial_phases"`
	// CampaignTasks and PoolTasks are the workflow task latencies of the
	// campaign's and the pool's runs.
	CampaignTasks WorkflowTaskLatency `json:"campaign_tasks"`
	PoolTasks     WorkflowTaskLatency `json:"pool_tasks"`
	// TrialEventTypes breaks trial 1's history down by event type.
	TrialEventTypes map[string]int `json:"trial_event_types"`

	CampaignRuns           []RunInfo `json:"campaign_runs"`
	CampaignContinuedAsNew int       `json:"campaign_continued_as_new"`
	PoolRuns               []RunInfo `json:"pool_runs"`
	PoolContinuedAsNew     int       `json:"pool_continued_as_new"`
	// PeakHistory is the longest history of any run (campaign, pool or
	// trial); PeakHistoryRun names it.
	PeakHistory    int64   `json:"peak_history"`
	PeakHistoryRun RunInfo `json:"peak_history_run"`
	HistoryLimit   int     `json:"history_limit"`

	RayTune RayTuneFigure `json:"ray_tune"`
	// PerCoreVsRayTune is TrialsPerSecondPerCore / Ray Tune's.
	PerCoreVsRayTune float64 `json:"per_core_vs_ray_tune"`
	// ServerCPUSeconds and WorkerCPUSeconds are the CPU time the dev
	// server and this process (the worker, and the benchmark's probes)
	// spent on the campaign; per trial they do not depend on the load.
	ServerCPUSeconds float64 `json:"server_cpu_seconds"`
	WorkerCPUSeconds float64 `json:"worker_cpu_seconds"`
	// TrainerCPUSeconds is the CPU time of the trainers the worker ran
	// (this process's children, counted once each has been waited for).
	TrainerCPUSeconds float64 `json:"trainer_cpu_seconds"`
	// NodeIdle is how long a node sat idle between one trainer's end and
	// the next trainer's launch on it (activities NodeIdle), in seconds:
	// the orchestration's gap between two trials on one slot.
	NodeIdle Stats `json:"node_idle_seconds"`
	// Ramp is how long the campaign took to fill its nodes, and ran on
	// after its last trainer.
	Ramp Ramp `json:"ramp"`
	// Pipelined: the campaign queued each slot's next trial behind the
	// one training (inline, random search; workflows/campaign_pipeline.go).
	Pipelined bool `json:"pipelined,omitempty"`
	// ReadBack is every trial's result read back after the campaign.
	ReadBack ReadBack `json:"read_back"`
	// Dashboard is what the dashboard costs for the campaign once it
	// ended.
	Dashboard *DashboardFigure `json:"dashboard,omitempty"`
	// Probes are the user's commands and the memory, sampled as the
	// campaign ran (every --progress-every).
	Probes []ProbeSample `json:"probes,omitempty"`
	// Optuna is the same campaign run by Optuna on this machine right
	// after (--vs-optuna); VsOptuna is TrialsPerSecond / Optuna's.
	Optuna   *OptunaFigure `json:"optuna,omitempty"`
	VsOptuna float64       `json:"vs_optuna,omitempty"`
	// Floor is the same trials at Temporal's floor (--vs-floor); VsFloor
	// is TrialsPerSecond / the floor's.
	Floor   *FloorFigure `json:"floor,omitempty"`
	VsFloor float64      `json:"vs_floor,omitempty"`
}

// ReadBack is `gleaner trials --limit 0` after the campaign: how long it
// took, the trials it listed, and those completed with the objective.
type ReadBack struct {
	Seconds       float64 `json:"seconds"`
	Trials        int     `json:"trials"`
	WithObjective int     `json:"with_objective"`
}

// OptunaFigure is scripts/campaign_optuna.py's result.
type OptunaFigure struct {
	Version         string   `json:"optuna_version"`
	Trials          int      `json:"trials"`
	Completed       int      `json:"completed"`
	Failed          int      `json:"failed"`
	Concurrent      int      `json:"concurrent"`
	WallSeconds     float64  `json:"wall_seconds"`
	TrialsPerSecond float64  `json:"trials_per_second"`
	Best            *float64 `json:"best"`
	// CPUSeconds is Optuna's own process's CPU time (user + system) over
	// the study, TrainerCPUSeconds its trainers' (its children's, each
	// once waited for): the same accounting as Gleaner's worker and
	// trainers.
	CPUSeconds        float64 `json:"cpu_seconds"`
	TrainerCPUSeconds float64 `json:"trainer_cpu_seconds"`
}

// RayTuneFigure is the figure compared with.
type RayTuneFigure struct {
	Trials                 int     `json:"trials"`
	Seconds                float64 `json:"seconds"`
	CPUs                   int     `json:"cpus"`
	TrialsPerSecond        float64 `json:"trials_per_second"`
	TrialsPerSecondPerCore float64 `json:"trials_per_second_per_core"`
}

func rayTune() RayTuneFigure {
	tps := RayTuneTrials / RayTuneSeconds
	return RayTuneFigure{Trials: RayTuneTrials, Seconds: RayTuneSeconds, CPUs: RayTuneCPUs,
		TrialsPerSecond: tps, TrialsPerSecondPerCore: tps / RayTuneCPUs}
}

func (o *CampaignOptions) validate() error {
	switch {
	case o.Trials < 1:
		return fmt.Errorf("--trials: %d must be at least 1", o.Trials)
	case o.Concurrent < 1:
		return fmt.Errorf("--concurrent: %d must be at least 1", o.Concurrent)
	case o.Nodes < 1:
		return fmt.Errorf("--nodes: %d must be at least 1", o.Nodes)
	case !(o.Seconds > 0) || o.Seconds > 600:
		return fmt.Errorf("--trial-seconds: %v must be in (0, 600]", o.Seconds)
	case o.VsFloor && o.Trials > FloorMaxTrials:
		return fmt.Errorf("--vs-floor: --trials %d is over %d (the floor is one workflow, without continue-as-new)", o.Trials, FloorMaxTrials)
	}
	if o.Steps <= 0 {
		o.Steps = 20
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

// CampaignName is the benchmark campaign's (and pool's) name.
const CampaignName = "bench-campaign"

// RunCampaign runs one campaign of o.Trials go-mlp trials of about
// o.Seconds each, o.Concurrent in flight, each on exactly one of o.Nodes
// CPU slots, against a fresh dev server and an in-process worker, and
// measures it.
//
// The report comes before the temporary directory is removed: the worker
// keeps a run directory per trial, and removing 100,000 of them takes
// minutes. cleanup removes it; it is never nil.
func RunCampaign(ctx context.Context, o CampaignOptions) (_ *CampaignReport, cleanup func(), _ error) {
	cleanup = func() {}
	if err := o.validate(); err != nil {
		return nil, cleanup, err
	}
	e, err := setup(ctx, envOptions{Slots: o.Nodes, RepoDir: o.RepoDir, Log: o.Log, ServerConfig: o.ServerConfig, ServerLog: o.ServerLog})
	if err != nil {
		return nil, cleanup, err
	}
	rep, err := runCampaign(ctx, o, e)
	e.stop()
	return rep, func() {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "bench: removing the worker's run directories (%s)\n", e.dir)
		}
		e.Close()
	}, err
}

// runCampaign runs and measures the campaign in e.
func runCampaign(ctx context.Context, o CampaignOptions, e *env) (*CampaignReport, error) {

	stepMS := math.Round(o.Seconds*1000/float64(o.Steps)*1000) / 1000
	rep := &CampaignReport{
		Trials: o.Trials, Concurrent: o.Concurrent, Nodes: o.Nodes, TrialSeconds: o.Seconds,
		Steps: o.Steps, StepMS: stepMS, CPUs: runtime.NumCPU(), ServerConfig: o.ServerConfig, Inline: o.Inline, HistoryLimit: HistoryLimit, RayTune: rayTune(),
	}
	spec := campaignSpec(e.trainer, o, stepMS)
	wfID := workflows.CampaignWorkflowID(spec.Name)
	rep.Pipelined = workflows.Pipelined(spec.WithDefaults())

	fmt.Fprintf(o.Log, "bench: campaign of %d trials × %.3g s (%d steps of %g ms), %d in flight, %d nodes\n",
		o.Trials, o.Seconds, o.Steps, stepMS, o.Concurrent, o.Nodes)
	start := time.Now()
	server0, _ := cpuTimes(e.srv.PID())
	worker0, trainers0 := cpuTimes(os.Getpid())
	run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: TaskQueue},
		workflows.CampaignWorkflowName, workflows.CampaignInput{Spec: spec})
	if err != nil {
		return nil, fmt.Errorf("starting the campaign: %w", err)
	}
	gc := gclient.New(e.c, gclient.Options{TaskQueue: TaskQueue, Namespace: e.srv.Namespace(), UIBase: "-"})
	stopProgress := progress(ctx, gc, spec.Name, e.srv.PID(), o.Trials, start, o.ProgressEvery, o.Log)
	var res workflows.CampaignResult
	err = run.Get(ctx, &res)
	wall := time.Since(start)
	rep.Ramp = ramp(e.w.Activities, start, start.Add(wall))
	rep.Probes = stopProgress()
	server1, _ := cpuTimes(e.srv.PID())
	worker1, trainers1 := cpuTimes(os.Getpid())
	rep.ServerCPUSeconds, rep.WorkerCPUSeconds, rep.TrainerCPUSeconds = server1-server0, worker1-worker0, trainers1-trainers0
	rep.NodeIdle = summarize(e.w.Activities.NodeIdle())
	if err != nil {
		return nil, fmt.Errorf("campaign %s: %w", wfID, err)
	}
	rep.WallSeconds = wall.Seconds()
	rep.State = string(res.State)
	rep.Completed, rep.Stopped, rep.Failed = res.Completed, res.Stopped, res.Failed
	rep.TrialsPerSecond = float64(res.Ended()) / wall.Seconds()
	rep.TrialsPerSecondPerCore = rep.TrialsPerSecond / float64(rep.CPUs)
	rep.PerCoreVsRayTune = rep.TrialsPerSecondPerCore / rep.RayTune.TrialsPerSecondPerCore
	fmt.Fprintf(o.Log, "bench: campaign %s in %.1f s (%d completed, %d failed); reading histories\n",
		res.State, wall.Seconds(), res.Completed, res.Failed)

	if err := rep.histories(ctx, e.c, wfID, spec.Pool, res.Created); err != nil {
		return nil, err
	}
	// Every trial's result, read back as `gleaner trials --limit 0` does.
	t0 := time.Now()
	all, err := gc.TrialsNewest(ctx, spec.Name, 0)
	if err != nil {
		return nil, fmt.Errorf("reading every trial back: %w", err)
	}
	rep.ReadBack = ReadBack{Seconds: time.Since(t0).Seconds(), Trials: len(all.Trials)}
	for _, t := range all.Trials {
		if _, ok := t.Metrics[spec.Objective.Metric]; t.State == workflows.TrialCompleted && ok {
			rep.ReadBack.WithObjective++
		}
	}
	fmt.Fprintf(o.Log, "bench: reading the campaign as the dashboard does\n")
	dash, err := dashboardFigure(ctx, gc, spec.Name)
	if err != nil {
		return nil, err
	}
	rep.Dashboard = &dash
	if o.VsFloor {
		e.stop()
		f, err := runFloor(ctx, o, e.dir, e.trainer, stepMS)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			// What was measured of Gleaner's campaign stays.
			fmt.Fprintf(o.Log, "bench: the floor failed, left out of the report: %v\n", err)
		default:
			rep.Floor = f
			if f.TrialsPerSecond > 0 {
				rep.VsFloor = rep.TrialsPerSecond / f.TrialsPerSecond
			}
		}
	}
	if o.VsOptuna {
		// Optuna runs on the same machine with Gleaner's server and worker
		// gone, on a copy of the same trainer.
		trainer, err := os.CreateTemp("", "gleaner-bench-go-mlp-")
		if err != nil {
			return nil, err
		}
		trainer.Close()
		defer os.Remove(trainer.Name())
		if err := copyExecutable(e.trainer, trainer.Name()); err != nil {
			return nil, err
		}
		repo := e.repo
		e.stop()
		if rep.Optuna, err = runOptuna(ctx, o, repo, trainer.Name(), stepMS); err != nil {
			return nil, err
		}
		rep.VsOptuna = rep.TrialsPerSecond / rep.Optuna.TrialsPerSecond
	}
	return rep, nil
}

// runOptuna runs scripts/campaign_optuna.py: the same trainer, parameters
// and concurrency through Optuna.
func runOptuna(ctx context.Context, o CampaignOptions, repo, trainer string, stepMS float64) (*OptunaFigure, error) {
	py := o.Python
	if py == "" {
		py = "/usr/bin/python3" // Debian's python3-optuna serves this one
	}
	script := filepath.Join(repo, "scripts", "campaign_optuna.py")
	fmt.Fprintf(o.Log, "bench: the same campaign through Optuna (%s %s)\n", py, script)
	cmd := exec.CommandContext(ctx, py, script, "--trainer", trainer, "--trials", fmt.Sprint(o.Trials),
		"--concurrent", fmt.Sprint(o.Concurrent), "--steps", fmt.Sprint(o.Steps), "--step-ms", fmt.Sprint(stepMS))
	cmd.Stderr = o.Log
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("--vs-optuna: %s %s: %w", py, script, err)
	}
	var f OptunaFigure
	if err := json.Unmarshal(out, &f); err != nil {
		return nil, fmt.Errorf("--vs-optuna: reading the script's result %q: %w", out, err)
	}
	return &f, nil
}

func copyExecutable(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		return err
	}
	return os.Chmod(to, 0o755) // WriteFile keeps an existing file's mode
}

func campaignSpec(trainer string, o CampaignOptions, stepMS float64) gleaner.CampaignSpec {
	fixed := func(name, value string) hpo.Param {
		return hpo.Param{Name: name, Type: hpo.ParamChoice, Choices: []string{value}}
	}
	return gleaner.CampaignSpec{
		Name:    CampaignName,
		Pool:    CampaignName,
		Command: []string{trainer},
		Space: hpo.Space{
			{Name: "lr", Type: hpo.ParamFloat, Min: 0.01, Max: 0.5, Log: true},
			{Name: "hidden", Type: hpo.ParamInt, Min: 4, Max: 32},
			fixed("batch", "32"),
			fixed("steps", fmt.Sprint(o.Steps)),
			fixed("step_ms", fmt.Sprint(stepMS)),
			fixed("report_every", "5"),
			fixed("checkpoint_every", "10"),
		},
		Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"},
		Budget:    gleaner.Budget{MaxTrials: o.Trials, MaxConcurrent: o.Concurrent},
		Resources: gleaner.Resources{MinNodes: 1, MaxNodes: 1},
		Trial:     gleaner.TrialPolicy{GracePeriod: gleaner.Duration(5 * time.Second), MaxRestarts: 2, Inline: o.Inline},
	}
}

// progress prints trials done / total every `every` until stopped, and
// probes the campaign as a user would (status, leaderboard, trials) and the
// memory of the worker and the server; stop returns the samples.
func progress(ctx context.Context, c *gclient.Client, name string, serverPID, total int, start time.Time, every time.Duration, w io.Writer) (stop func() []ProbeSample) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var samples []ProbeSample
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			qctx, qcancel := context.WithTimeout(ctx, 30*time.Second)
			ps, st, err := probe(qctx, c, name, serverPID, start)
			qcancel()
			el := time.Since(start).Seconds()
			if err != nil {
				if ctx.Err() == nil {
					fmt.Fprintf(w, "bench: %5.0f s  (%v)\n", el, err)
				}
				continue
			}
			samples = append(samples, ps)
			fmt.Fprintf(w, "bench: %5.0f s  %d/%d trials done, %d running, %d failed, %.2f trials/s, campaign run %d · status %.0f ms, leaderboard %.0f ms, trials %.0f ms · RSS worker %.0f MB, server %.0f MB\n",
				el, st.Ended(), total, st.Running, st.Failed, float64(st.Ended())/el, st.Runs+1,
				ps.StatusMS, ps.LeaderboardMS, ps.TrialsMS, ps.WorkerRSSMB, ps.ServerRSSMB)
		}
	}()
	return func() []ProbeSample { cancel(); wg.Wait(); return samples }
}

// histories measures the trial, campaign and pool histories.
func (r *CampaignReport) histories(ctx context.Context, c client.Client, wfID, pool string, created int) error {
	peak := func(ri RunInfo) {
		if ri.HistoryLength > r.PeakHistory {
			r.PeakHistory, r.PeakHistoryRun = ri.HistoryLength, ri
		}
	}
	var err error
	if r.CampaignRuns, err = runChain(ctx, c, wfID); err != nil {
		return err
	}
	for _, ri := range r.CampaignRuns {
		peak(ri)
		if ri.Status == "continued-as-new" {
			r.CampaignContinuedAsNew++
		}
	}
	if r.PoolRuns, err = runChain(ctx, c, workflows.PoolWorkflowID(pool)); err != nil {
		return err
	}
	for _, ri := range r.PoolRuns {
		peak(ri)
		if ri.Status == "continued-as-new" {
			r.PoolContinuedAsNew++
		}
	}

	// Every trial's runs (a trial continues as new only when very long,
	// so usually one each), described in parallel.
	if r.CampaignTasks, err = taskLatency(ctx, c, r.CampaignRuns); err != nil {
		return err
	}
	if r.PoolTasks, err = taskLatency(ctx, c, r.PoolRuns); err != nil {
		return err
	}
	if r.Inline {
		return r.inlineHistories(ctx, c, created)
	}
	type trialOut struct {
		evs    []*historypb.HistoryEvent
		events int64
		wall   float64
		runs   []RunInfo
		err    error
	}
	outs := make([]trialOut, created)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range outs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id := workflows.TrialWorkflowID(wfID, i+1)
			runs, err := runChain(ctx, c, id)
			if err != nil {
				outs[i].err = err
				return
			}
			outs[i].runs = runs
			for _, ri := range runs {
				outs[i].events += ri.HistoryLength
			}
			d, err := c.DescribeWorkflowExecution(ctx, id, runs[0].RunID)
			if err != nil {
				outs[i].err = err
				return
			}
			info := d.GetWorkflowExecutionInfo()
			last, err := c.DescribeWorkflowExecution(ctx, id, runs[len(runs)-1].RunID)
			if err != nil {
				outs[i].err = err
				return
			}
			if ct := last.GetWorkflowExecutionInfo().GetCloseTime(); ct != nil {
				outs[i].wall = ct.AsTime().Sub(info.GetStartTime().AsTime()).Seconds()
			}
			if len(runs) == 1 {
				outs[i].evs, outs[i].err = history(ctx, c, id, runs[0].RunID)
			}
		}()
	}
	wg.Wait()
	var events, walls []float64
	var errs []error
	var phases phaseSamples
	for _, o := range outs {
		if o.evs != nil {
			phases.addTrial(o.evs)
		}
		if o.err != nil {
			errs = append(errs, o.err)
			continue
		}
		events = append(events, float64(o.events))
		walls = append(walls, o.wall)
		for _, ri := range o.runs {
			peak(ri)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d trial histories unreadable: %w", len(errs), errors.Join(errs[:min(3, len(errs))]...))
	}
	r.EventsPerTrial = summarize(events)
	r.TrialWallSeconds = summarize(walls)
	r.TrialPhases = phases.stats()
	if created > 0 && outs[0].evs != nil {
		r.TrialEventTypes = eventTypeCounts(outs[0].evs)
	}
	return nil
}

// WriteText prints the report for people.
func (r *CampaignReport) WriteText(w io.Writer) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	mode := "a workflow each"
	if r.Inline {
		mode = "inline"
	}
	p("campaign: %d trials of ~%.3g s (go-mlp, %d steps × %g ms, %s), %d in flight, min=max=1 of %d CPU slots, %d CPUs\n",
		r.Trials, r.TrialSeconds, r.Steps, r.StepMS, mode, r.Concurrent, r.Nodes, r.CPUs)
	if len(r.ServerConfig) > 0 {
		p("server:   %v\n", r.ServerConfig)
	}
	p("result:   %s — %d completed, %d stopped, %d failed\n", r.State, r.Completed, r.Stopped, r.Failed)
	p("wall:     %.1f s  →  %.2f trials/s, %.3f trials/s per core\n", r.WallSeconds, r.TrialsPerSecond, r.TrialsPerSecondPerCore)
	if n := float64(r.Completed + r.Stopped + r.Failed); n > 0 {
		p("cpu:      server %.1f s (%.1f ms per trial), worker %.1f s (%.1f ms per trial), together %.1f ms per trial; trainers %.1f ms per trial\n",
			r.ServerCPUSeconds, 1000*r.ServerCPUSeconds/n, r.WorkerCPUSeconds, 1000*r.WorkerCPUSeconds/n,
			1000*(r.ServerCPUSeconds+r.WorkerCPUSeconds)/n, 1000*r.TrainerCPUSeconds/n)
	}
	if r.NodeIdle.N > 0 {
		how := "each run scheduled once a slot frees"
		if r.Pipelined {
			how = "pipelined: each slot's next run queued while the one before it trains"
		}
		p("node idle: %s s (p50/p95/mean) from a trainer's end to the next launch on its node, %s\n", pp(r.NodeIdle), how)
	}
	if rm := r.Ramp; rm.Nodes > 0 {
		p("ramp:     first trainer %.2f s after submit, on all %d nodes %.2f s; campaign closed %.2f s after its last trainer\n",
			rm.FirstSeconds, rm.Nodes, rm.AllSeconds, rm.TailSeconds)
	}
	if r.TrialWallSeconds.N > 0 { // trial workflows (inline trials have none)
		p("trial:    start→close %.2f s mean, p50 %.2f, p95 %.2f, max %.2f\n",
			r.TrialWallSeconds.Mean, r.TrialWallSeconds.P50, r.TrialWallSeconds.P95, r.TrialWallSeconds.Max)
	}
	p("history:  %.1f events per trial (mean), max %.0f; peak of any run %d (%s %s), limit %d\n",
		r.EventsPerTrial.Mean, r.EventsPerTrial.Max, r.PeakHistory, r.PeakHistoryRun.WorkflowID, r.PeakHistoryRun.Status, r.HistoryLimit)
	p("runs:     campaign %d (%d continued-as-new), pool %d (%d continued-as-new)\n",
		len(r.CampaignRuns), r.CampaignContinuedAsNew, len(r.PoolRuns), r.PoolContinuedAsNew)
	for _, ri := range r.CampaignRuns {
		p("          campaign run %s  %-16s %6d events\n", ri.RunID, ri.Status, ri.HistoryLength)
	}
	for _, ri := range r.PoolRuns {
		p("          pool run     %s  %-16s %6d events\n", ri.RunID, ri.Status, ri.HistoryLength)
	}
	ph := r.TrialPhases
	p("trial phases (s, p50/p95/mean): register %s · wait for assignment %s · assignment→run started %s · run %s · run done→closed %s\n",
		pp(ph.Register), pp(ph.Assignment), pp(ph.Launch), pp(ph.Run), pp(ph.Finish))
	if ph.Trials > 0 {
		p("          %d of %d trials launched their trainer more than once (a rescale, a move, a preemption)\n", ph.Relaunched, ph.Trials)
	}
	if r.Pipelined {
		p("          (pipelined: a run is scheduled and started while the one before it trains, and waits on the worker for its node: its run phase includes that wait; node idle is the gap)\n")
	}
	p("workflow tasks (ms, p50/p95/max): campaign queue %s, processing %s, child start %s (%d tasks); pool queue %s, processing %s (%d tasks)\n",
		pp(r.CampaignTasks.Queue), pp(r.CampaignTasks.Processing), pp(r.CampaignTasks.ChildStart), r.CampaignTasks.Tasks,
		pp(r.PoolTasks.Queue), pp(r.PoolTasks.Processing), r.PoolTasks.Tasks)
	if len(r.TrialEventTypes) > 0 {
		names := make([]string, 0, len(r.TrialEventTypes))
		for n := range r.TrialEventTypes {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			a, b := r.TrialEventTypes[names[i]], r.TrialEventTypes[names[j]]
			return a > b || (a == b && names[i] < names[j])
		})
		p("trial 1:  ")
		for i, n := range names {
			if i > 0 {
				p(", ")
			}
			p("%s %d", n, r.TrialEventTypes[n])
		}
		p("\n")
	}
	p("read back: every trial (trials --limit 0): %d listed, %d completed with %s, in %.2f s\n",
		r.ReadBack.Trials, r.ReadBack.WithObjective, "the objective", r.ReadBack.Seconds)
	if d := r.Dashboard; d != nil {
		p("dashboard: %d trials read in %.2f s (%d calls), again in %.3f s (%d calls); its first answer to a page %.2f s cold, %.3f s warm (%.1f MB gzipped)\n",
			d.Trials, d.FirstReadSeconds, d.FirstReadCalls, d.AgainSeconds, d.AgainCalls, d.PageColdSeconds, d.PageWarmSeconds, float64(d.PageBytes)/1e6)
	}
	if len(r.Probes) > 0 {
		var st, lb, tr, wr, sr []float64
		busy := 0
		for _, x := range r.Probes {
			if x.TrialsBusy {
				busy++
			}
			st, lb, tr = append(st, x.StatusMS), append(lb, x.LeaderboardMS), append(tr, x.TrialsMS)
			wr, sr = append(wr, x.WorkerRSSMB), append(sr, x.ServerRSSMB)
		}
		p("commands (ms, p50/p95/max over %d probes): status %s, leaderboard %s, trials (newest 1,000) %s; %d times the campaign was too busy and trials listed its chunks only\n",
			len(r.Probes), pm(summarize(st)), pm(summarize(lb)), pm(summarize(tr)), busy)
		p("memory (MB, first/p50/max/last): worker %.0f/%.0f/%.0f/%.0f, server %.0f/%.0f/%.0f/%.0f\n",
			wr[0], summarize(wr).P50, summarize(wr).Max, wr[len(wr)-1], sr[0], summarize(sr).P50, summarize(sr).Max, sr[len(sr)-1])
		step := max(1, len(r.Probes)/10)
		for i := 0; i < len(r.Probes); i += step {
			x := r.Probes[i]
			p("          %6.0f s  %7d ended  worker %5.0f MB  server %5.0f MB  status %5.0f ms  trials %5.0f ms\n",
				x.Seconds, x.Ended, x.WorkerRSSMB, x.ServerRSSMB, x.StatusMS, x.TrialsMS)
		}
	}
	rt := r.RayTune
	p("Ray Tune: %d × 1 s trials in %.0f s on %d CPUs = %.1f trials/s, %.3f per core\n",
		rt.Trials, rt.Seconds, rt.CPUs, rt.TrialsPerSecond, rt.TrialsPerSecondPerCore)
	p("per core: %.2f× Ray Tune's (%.3f vs %.3f trials/s per core)\n", r.PerCoreVsRayTune, r.TrialsPerSecondPerCore, rt.TrialsPerSecondPerCore)
	if o := r.Optuna; o != nil {
		p("Optuna %s, same trainer, parameters and concurrency, this machine: %d trials (%d completed, %d failed) in %.1f s = %.2f trials/s\n",
			o.Version, o.Trials, o.Completed, o.Failed, o.WallSeconds, o.TrialsPerSecond)
		p("vs Optuna: %.2f× Optuna's trials/s (%.2f vs %.2f)\n", r.VsOptuna, r.TrialsPerSecond, o.TrialsPerSecond)
		if n, on := float64(r.Completed+r.Stopped+r.Failed), float64(o.Trials); n > 0 && on > 0 {
			p("cpu per trial (ms): orchestration Gleaner %.1f (server %.1f + worker %.1f) vs Optuna %.1f (its process); trainers %.1f vs %.1f\n",
				1000*(r.ServerCPUSeconds+r.WorkerCPUSeconds)/n, 1000*r.ServerCPUSeconds/n, 1000*r.WorkerCPUSeconds/n,
				1000*o.CPUSeconds/on, 1000*r.TrainerCPUSeconds/n, 1000*o.TrainerCPUSeconds/on)
		}
	}
	if f := r.Floor; f != nil && f.Trials > 0 {
		n := float64(f.Trials)
		p("Temporal's floor, same trainer, parameters and concurrency, this machine, nothing of Gleaner's (%s): %d trials (%d failed) in %.1f s = %.2f trials/s; cpu per trial (ms): server %.1f + worker %.1f, trainers %.1f\n",
			f.describe(), f.Trials, f.Failed, f.WallSeconds, f.TrialsPerSecond,
			1000*f.ServerCPUSeconds/n, 1000*f.WorkerCPUSeconds/n, 1000*f.TrainerCPUSeconds/n)
		p("vs floor: %.2f× the floor's trials/s (%.2f vs %.2f)", r.VsFloor, r.TrialsPerSecond, f.TrialsPerSecond)
		if o := r.Optuna; o != nil {
			p("; the floor is %.2f× Optuna's", f.TrialsPerSecond/o.TrialsPerSecond)
		}
		p("\n")
	}
	return nil
}

func pm(s Stats) string { return fmt.Sprintf("%.3g/%.3g/%.3g", s.P50, s.P95, s.Max) }

func pp(s Stats) string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g/%.3g/%.3g", s.P50, s.P95, s.Mean)
}

// Ramp is the start and the end of a campaign on its nodes, in seconds.
type Ramp struct {
	// Nodes is how many nodes ran a trainer.
	Nodes int `json:"nodes"`
	// FirstSeconds and AllSeconds are from the submit to the first
	// trainer's launch and to the launch that filled the last node.
	FirstSeconds float64 `json:"first_seconds"`
	AllSeconds   float64 `json:"all_seconds"`
	// TailSeconds is from the last trainer's end to the campaign's close.
	TailSeconds float64 `json:"tail_seconds"`
}

// ramp reads the worker's node span of a campaign submitted at start and
// closed at end.
func ramp(a *activities.Activities, start, end time.Time) Ramp {
	first, last := a.NodeSpan()
	if len(first) == 0 {
		return Ramp{}
	}
	r := Ramp{Nodes: len(first), FirstSeconds: math.Inf(1)}
	if !last.IsZero() {
		r.TailSeconds = end.Sub(last).Seconds()
	}
	for _, t := range first {
		s := t.Sub(start).Seconds()
		r.FirstSeconds, r.AllSeconds = min(r.FirstSeconds, s), max(r.AllSeconds, s)
	}
	return r
}
