package benchrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// RescaleOptions configure RunRescale.
type RescaleOptions struct {
	// Rescales is how many times the idle set flips between 2 and 4 nodes.
	Rescales int
	// StepMS is the trainer's step length (default 10 ms; it reports
	// every step, so its first report comes one step after it starts).
	StepMS float64
	// Timeout bounds the wait for each rescale (default 2 minutes).
	Timeout time.Duration
	RepoDir string
	Log     io.Writer
	// ServerConfig are dynamic config values (KEY=VALUE) for the dev server.
	ServerConfig []string
	// Hosts, when 2, runs the trial on agents instead of the worker's
	// slots: agent b1 (2 nodes) stays, agent b2 (2 nodes) joins and leaves,
	// so the trial flips between one host and two (one rank per host).
	Hosts int
}

// RescaleReport is RunRescale's result; its JSON keys are a stable
// contract. Durations are milliseconds, from the server's event times in
// the trial's history.
type RescaleReport struct {
	Rescales int `json:"rescales"`
	CPUs     int `json:"cpus"`
	// Hosts is 1, or 2 when the trial ran on agents (RescaleOptions.Hosts):
	// a relaunch counts as started once every rank has started.
	Hosts int `json:"hosts"`
	// LatencyMS: the pool's SignalAssignment reaching the trial →
	// ActivityTaskStarted of the relaunched RunTrial.
	LatencyMS Stats   `json:"latency_ms"`
	TargetMS  float64 `json:"target_p50_ms"`
	// Breakdown of the latency into its phases.
	SignalToCancelRequestedMS    Stats `json:"signal_to_cancel_requested_ms"`
	CancelRequestedToOldClosedMS Stats `json:"cancel_requested_to_old_closed_ms"`
	OldClosedToNewScheduledMS    Stats `json:"old_closed_to_new_scheduled_ms"`
	NewScheduledToStartedMS      Stats `json:"new_scheduled_to_started_ms"`
	// TrainerFirstReportMS: RunTrial started → the trainer's first report
	// line (its own clock): process start, data set, checkpoint load, one
	// step. Not part of LatencyMS.
	TrainerFirstReportMS Stats           `json:"trainer_first_report_ms"`
	Samples              []RescaleSample `json:"samples"`
	// OtherRelaunches are relaunches on as many nodes as the run before:
	// after a run that failed, or an assignment that moved the trial
	// without resizing it (a loaded machine brought one about). They are not
	// rescales and are in no latency.
	OtherRelaunches    []Relaunch `json:"other_relaunches"`
	TrialHistoryLength int64      `json:"trial_history_length"`
	// TrialState is how the trial ended after the benchmark stopped it
	// (want "stopped"); TrialError is its error, if any.
	TrialState string `json:"trial_state"`
	TrialError string `json:"trial_error,omitempty"`
	// RunTrialFailures counts RunTrial attempts that failed (want 0).
	RunTrialFailures int `json:"run_trial_failures"`
}

// RescaleSample is one rescale.
type RescaleSample struct {
	From                      int     `json:"from"`
	To                        int     `json:"to"`
	Run                       int     `json:"run"` // the relaunch's run number
	LatencyMS                 float64 `json:"latency_ms"`
	SignalToCancelRequestedMS float64 `json:"signal_to_cancel_requested_ms"`
	CancelRequestedToClosedMS float64 `json:"cancel_requested_to_old_closed_ms"`
	ClosedToScheduledMS       float64 `json:"old_closed_to_new_scheduled_ms"`
	ScheduledToStartedMS      float64 `json:"new_scheduled_to_started_ms"`
	TrainerFirstReportMS      float64 `json:"trainer_first_report_ms"` // -1: unknown
}

// Relaunch is a run started on as many nodes as the run before it.
type Relaunch struct {
	Run   int `json:"run"`
	Nodes int `json:"nodes"`
	// Cancelled: the trial stopped the run before (for a new assignment);
	// otherwise that run ended by itself (it failed, or its agent left).
	Cancelled bool `json:"cancelled"`
}

// nodeSet is a node source the benchmark drives.
type nodeSet struct {
	mu    sync.Mutex
	nodes []cluster.Node
}

func (s *nodeSet) set(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = nil
	for i := range n {
		s.nodes = append(s.nodes, cluster.Node{ID: cluster.SlotID(i), Type: cluster.CPUNodeType})
	}
}

func (s *nodeSet) Idle(context.Context, time.Time) ([]cluster.Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.nodes), nil
}

// Names of the rescale benchmark's trial.
const (
	RescaleCampaign = "bench-rescale"
	RescaleTrialID  = "t00001"
)

// RunRescale runs one long go-mlp trial (1–4 nodes) stand-alone against a
// fresh dev server, flips its pool's idle set between 2 and 4 nodes
// o.Rescales times (waiting each time until the trial trains on the new
// count), stops it, and measures every relaunch from its history.
func RunRescale(ctx context.Context, o RescaleOptions) (*RescaleReport, error) {
	if o.Rescales < 1 {
		return nil, fmt.Errorf("--rescales: %d must be at least 1", o.Rescales)
	}
	if o.StepMS <= 0 {
		o.StepMS = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Hosts != 0 && o.Hosts != 1 && o.Hosts != 2 {
		return nil, fmt.Errorf("--hosts: %d: want 1 or 2", o.Hosts)
	}
	nodes := &nodeSet{}
	if o.Hosts < 2 {
		nodes.set(2)
	}
	e, err := setup(ctx, envOptions{Slots: 4, Source: nodes, RepoDir: o.RepoDir, Log: o.Log, ServerConfig: o.ServerConfig})
	if err != nil {
		return nil, err
	}
	defer e.Close()

	wfID := workflows.TrialWorkflowID(workflows.CampaignWorkflowID(RescaleCampaign), 1)
	in := workflows.TrialInput{
		TrialID: RescaleTrialID, Number: 1, CampaignID: RescaleCampaign, Pool: RescaleCampaign,
		Params: hpo.Params{
			"lr": hpo.Float(0.1), "hidden": hpo.Float(16), "batch": hpo.Float(32),
			"steps": hpo.Float(1e8), "step_ms": hpo.Float(o.StepMS),
			"report_every": hpo.Float(1), "checkpoint_every": hpo.Float(1e6),
		},
		Command: []string{e.trainer}, MinNodes: 1, MaxNodes: 4, ObjectiveMetric: "val_loss",
		GracePeriod: 10 * time.Second, MaxRestarts: 2,
		RescaleUpCost: 5 * time.Second, RescaleDownCost: 5 * time.Second,
	}
	run, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: TaskQueue}, workflows.TrialWorkflowName, in)
	if err != nil {
		return nil, fmt.Errorf("starting the trial: %w", err)
	}
	runsDir := filepath.Join(e.dataDir, RescaleCampaign, RescaleTrialID, "runs")
	hosts := benchHosts{e: e, log: o.Log}
	defer hosts.stop()
	if o.Hosts == 2 {
		// The trial started the pool (with worker.InteractivePool); the agents join it.
		if err := hosts.start(ctx, "b1"); err != nil {
			return nil, err
		}
	}
	wait := func(n, rescales int) error {
		return waitEvery(ctx, o.Timeout, 50*time.Millisecond, func() (bool, error) {
			v, err := e.c.QueryWorkflow(ctx, wfID, "", workflows.QueryStatus)
			if err != nil {
				return false, err
			}
			var s workflows.TrialStatus
			if err := v.Get(&s); err != nil {
				return false, err
			}
			if s.State.Terminal() {
				return false, fatalError{fmt.Errorf("the trial ended: %s %s", s.State, s.Error)}
			}
			if s.State != workflows.TrialRunning || len(s.Nodes) != n || s.Rescales < rescales {
				return false, nil
			}
			// The new run's trainer has reported: it really trains.
			return newestRunReported(runsDir), nil
		})
	}
	fmt.Fprintf(o.Log, "bench: waiting for the trial to train on 2 nodes\n")
	if err := wait(2, 0); err != nil {
		return nil, fmt.Errorf("the trial never ran on 2 nodes: %w", err)
	}
	poolID := workflows.PoolWorkflowID(RescaleCampaign)
	for i := 1; i <= o.Rescales; i++ {
		to := 4
		if i%2 == 0 {
			to = 2
		}
		if o.Hosts == 2 {
			// A join or a leave reaches the pool at once.
			var err error
			if to == 4 {
				err = hosts.start(ctx, "b2")
			} else {
				hosts.leave("b2")
			}
			if err != nil {
				return nil, err
			}
		} else {
			nodes.set(to)
			// Tell the pool at once rather than at its next poll: the poll
			// interval is not what is measured.
			if err := e.c.SignalWorkflow(ctx, poolID, "", workflows.SignalPollNow, nil); err != nil {
				return nil, fmt.Errorf("poll-now to %s: %w", poolID, err)
			}
		}
		t0 := time.Now()
		if err := wait(to, i); err != nil {
			return nil, fmt.Errorf("rescale %d (to %d nodes): %w", i, to, err)
		}
		fmt.Fprintf(o.Log, "bench: rescale %d/%d: trains on %d nodes after %.2f s\n", i, o.Rescales, to, time.Since(t0).Seconds())
	}
	if _, err := e.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: wfID, UpdateName: workflows.UpdateStop, Args: []any{workflows.ControlRequest{Reason: "benchmark done"}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	}); err != nil {
		return nil, fmt.Errorf("stopping the trial: %w", err)
	}
	var final workflows.TrialReport
	if err := run.Get(ctx, &final); err != nil {
		return nil, fmt.Errorf("trial %s: %w", wfID, err)
	}
	// Started events of activities with a retry policy are written when the
	// activity closes, so the history is read after the trial has ended.
	evs, err := history(ctx, e.c, wfID, "")
	if err != nil {
		return nil, err
	}
	rep, err := analyzeRescales(evs, runsDir)
	if err != nil {
		return nil, err
	}
	// On one host every flip is one relaunch. On agents the allocator also
	// acts on what it measures (a trial slower on two hosts than on one is
	// shrunk back) and a relaunch onto an agent that is leaving is
	// cancelled before all its ranks start: only complete relaunches count.
	if len(rep.Samples) < o.Rescales && (o.Hosts < 2 || len(rep.Samples) == 0) {
		return nil, fmt.Errorf("the history shows %d relaunches after an assignment, want %d", len(rep.Samples), o.Rescales)
	}
	rep.Rescales = o.Rescales
	rep.Hosts = max(o.Hosts, 1)
	rep.TrialState, rep.TrialError = string(final.State), final.Error
	rep.CPUs = runtime.NumCPU()
	rep.TrialHistoryLength = int64(len(evs))
	return rep, nil
}

// newestRunReported reports whether the highest-numbered run directory
// has report lines of a few trained steps (not only the line a
// multi-host trainer writes as its ranks meet): the relaunch is complete
// and trains, on every host.
func newestRunReported(runsDir string) bool {
	ents, err := os.ReadDir(runsDir)
	if err != nil {
		return false
	}
	best := -1
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > best {
			best = n
		}
	}
	if best < 0 {
		return false
	}
	b, err := os.ReadFile(filepath.Join(runsDir, strconv.Itoa(best), cluster.ReportFileName))
	return err == nil && bytes.Count(b, []byte("\n")) >= 5
}

// fatalError ends a waitEvery at once.
type fatalError struct{ error }

// activityRec is what the history says of one RunTrial.
type activityRec struct {
	run                                 int
	nodes                               int
	scheduled, started, cancelReq, done time.Time
	cancelReqID                         int64
}

// analyzeRescales pairs every relaunch (a RunTrial whose predecessor was
// cancelled and that was not preceded by a wait at 0 nodes) with the
// assignment signal that caused it.
func analyzeRescales(evs []*historypb.HistoryEvent, runsDir string) (*RescaleReport, error) {
	dc := converter.GetDefaultDataConverter()
	byID := map[int64]*activityRec{}
	var order []*activityRec
	type signal struct {
		id int64
		at time.Time
	}
	var signals []signal
	failures := 0
	for _, ev := range evs {
		at := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := ev.GetActivityTaskScheduledEventAttributes()
			if a.GetActivityType().GetName() != workflows.RunTrialActivityName {
				continue
			}
			var in workflows.RunTrialInput
			if err := dc.FromPayloads(a.GetInput(), &in); err != nil {
				return nil, fmt.Errorf("decoding RunTrial input (event %d): %w", ev.GetEventId(), err)
			}
			r := &activityRec{run: in.Run, nodes: len(in.Nodes), scheduled: at}

			byID[ev.GetEventId()] = r
			order = append(order, r)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if r := byID[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()]; r != nil {
				r.started = at
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
			if r := byID[ev.GetActivityTaskCancelRequestedEventAttributes().GetScheduledEventId()]; r != nil {
				r.cancelReq, r.cancelReqID = at, ev.GetEventId()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			if r := byID[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]; r != nil {
				r.done = at
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			if r := byID[ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()]; r != nil {
				r.done = at
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			if r := byID[ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId()]; r != nil {
				r.done = at
				failures++
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			if r := byID[ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()]; r != nil {
				r.done = at
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			if ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == workflows.SignalAssignment {
				signals = append(signals, signal{ev.GetEventId(), at})
			}
		}
	}
	order = byRun(order)
	ms := func(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }
	rep := &RescaleReport{TargetMS: 1000, RunTrialFailures: failures}
	var lat, s2c, c2d, d2s, s2st, first []float64
	for i := 1; i < len(order); i++ {
		prev, cur := order[i-1], order[i]
		if cur.started.IsZero() || prev.done.IsZero() || prev.done.After(cur.scheduled) {
			continue // not a relaunch
		}
		if cur.nodes == prev.nodes {
			rep.OtherRelaunches = append(rep.OtherRelaunches, Relaunch{Run: cur.run, Nodes: cur.nodes, Cancelled: prev.cancelReqID != 0})
			continue // not a rescale
		}
		var s RescaleSample
		if prev.cancelReqID != 0 {
			var sig *signal
			for j := range signals {
				if signals[j].id < prev.cancelReqID {
					sig = &signals[j]
				}
			}
			if sig == nil || sig.at.After(prev.cancelReq) {
				continue
			}
			s = RescaleSample{
				LatencyMS:                 ms(sig.at, cur.started),
				SignalToCancelRequestedMS: ms(sig.at, prev.cancelReq),
				CancelRequestedToClosedMS: ms(prev.cancelReq, prev.done),
				ClosedToScheduledMS:       ms(prev.done, cur.scheduled),
			}
		} else {
			// The old run ended before the assignment came (its agent left
			// and stopped its rank): from the assignment to the relaunch.
			var sig *signal
			for j := range signals {
				if !signals[j].at.After(cur.scheduled) && signals[j].at.After(prev.scheduled) {
					sig = &signals[j]
				}
			}
			if sig == nil {
				continue
			}
			s = RescaleSample{LatencyMS: ms(sig.at, cur.started), ClosedToScheduledMS: ms(maxTime(sig.at, prev.done), cur.scheduled)}
		}
		s.From, s.To, s.Run = prev.nodes, cur.nodes, cur.run
		s.ScheduledToStartedMS = ms(cur.scheduled, cur.started)
		s.TrainerFirstReportMS = -1
		if t, ok := firstReportTime(filepath.Join(runsDir, strconv.Itoa(cur.run), cluster.ReportFileName)); ok {
			s.TrainerFirstReportMS = ms(cur.started, t)
			first = append(first, s.TrainerFirstReportMS)
		}
		rep.Samples = append(rep.Samples, s)
		lat = append(lat, s.LatencyMS)
		s2c = append(s2c, s.SignalToCancelRequestedMS)
		c2d = append(c2d, s.CancelRequestedToClosedMS)
		d2s = append(d2s, s.ClosedToScheduledMS)
		s2st = append(s2st, s.ScheduledToStartedMS)
	}
	rep.LatencyMS = summarize(lat)
	rep.SignalToCancelRequestedMS = summarize(s2c)
	rep.CancelRequestedToOldClosedMS = summarize(c2d)
	rep.OldClosedToNewScheduledMS = summarize(d2s)
	rep.NewScheduledToStartedMS = summarize(s2st)
	rep.TrainerFirstReportMS = summarize(first)
	return rep, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// byRun merges the RunTrials of one run (its ranks, on several hosts)
// into one record: scheduled when the first was, started when the last
// started (every rank runs), cancel requested when the first was, done
// when the last closed.
func byRun(recs []*activityRec) []*activityRec {
	var out []*activityRec
	idx := map[int]*activityRec{}
	for _, r := range recs {
		m := idx[r.run]
		if m == nil {
			c := *r
			idx[r.run] = &c
			out = append(out, &c)
			continue
		}
		if r.started.After(m.started) || r.started.IsZero() {
			m.started = r.started
		}
		if !r.cancelReq.IsZero() && (m.cancelReq.IsZero() || r.cancelReq.Before(m.cancelReq)) {
			m.cancelReq, m.cancelReqID = r.cancelReq, r.cancelReqID
		}
		if r.done.After(m.done) || r.done.IsZero() {
			m.done = r.done
		}
	}
	return out
}

// firstReportTime is the time stamp of a report file's first line.
func firstReportTime(path string) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return time.Time{}, false
	}
	var line struct {
		Time float64 `json:"time"`
	}
	if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.Time <= 0 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(line.Time*1e9)), true
}

// WriteText prints the report for people.
func (r *RescaleReport) WriteText(w io.Writer) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	row := func(name string, s Stats) {
		p("  %-44s %8.1f %8.1f %8.1f %8.1f\n", name, s.P50, s.P95, s.Max, s.Mean)
	}
	if r.Hosts > 1 {
		p("rescale: %d relaunches of one go-mlp trial (1–4 nodes) on agents, flipping between 2 nodes on one host and 4 on two (agent b2 joins and leaves); %d CPUs\n", len(r.Samples), r.CPUs)
	} else {
		p("rescale: %d relaunches of one go-mlp trial (1–4 nodes), idle set flipping 2 ↔ 4; %d CPUs\n", len(r.Samples), r.CPUs)
	}
	p("  %-44s %8s %8s %8s %8s\n", "ms (server event times)", "p50", "p95", "max", "mean")
	row("assignment signal → relaunch started", r.LatencyMS)
	row("  signal → cancel requested", r.SignalToCancelRequestedMS)
	row("  cancel requested → old run closed", r.CancelRequestedToOldClosedMS)
	row("  old run closed → new run scheduled", r.OldClosedToNewScheduledMS)
	row("  new run scheduled → started", r.NewScheduledToStartedMS)
	row("trainer: started → first report (excluded)", r.TrainerFirstReportMS)
	verdict := "met"
	if r.LatencyMS.P50 > r.TargetMS {
		verdict = "NOT met"
	}
	p("target p50 ≤ %.0f ms: %s (p50 %.1f ms)\n", r.TargetMS, verdict, r.LatencyMS.P50)
	if len(r.OtherRelaunches) > 0 {
		var runs []string
		for _, o := range r.OtherRelaunches {
			runs = append(runs, strconv.Itoa(o.Run))
		}
		p("not rescales, not measured: %d relaunches on as many nodes as before (runs %s)\n", len(r.OtherRelaunches), strings.Join(runs, ", "))
	}
	p("trial: %s after the stop, %d history events, %d failed RunTrial attempts", r.TrialState, r.TrialHistoryLength, r.RunTrialFailures)
	if r.TrialError != "" {
		p(" (error: %s)", r.TrialError)
	}
	p("\n")
	return nil
}
