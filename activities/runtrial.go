package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/trial"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Error types of RunTrial failures (temporal.ApplicationError.Type).
const (
	ErrTypeTrainerFailed = "TrainerFailed"
	ErrTypeLaunchFailed  = "LaunchFailed"
)

// runState is RunTrial's heartbeat details: where a retry picks up.
type runState struct {
	Checkpoint string  `json:"checkpoint,omitempty"`
	Offset     int64   `json:"offset"`
	Samples    float64 `json:"samples"`
	Malformed  int     `json:"malformed"`
}

// RunTrial launches one run of a trial's trainer on its nodes and follows
// it until it exits or the activity is cancelled. It tails the report
// file, heartbeats (details: last checkpoint and report offset, so a retry
// after a failure or a lost worker resumes from the checkpoint), forwards
// progress to the trial workflow, and on cancellation stops the trainer
// gracefully (SIGTERM, SIGKILL after the grace period) and returns what it
// reached. A trainer that exits non-zero is an error, retried by the
// workflow's retry policy.
func (a *Activities) RunTrial(ctx context.Context, in workflows.RunTrialInput) (workflows.RunTrialResult, error) {
	info := activity.GetInfo(ctx)
	r := &runner{a: a, in: in, attempt: int(info.Attempt), wfID: info.WorkflowExecution.ID, log: activity.GetLogger(ctx)}
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &r.st); err != nil {
			return workflows.RunTrialResult{}, fmt.Errorf("reading heartbeat details: %w", err)
		}
	}
	resume := in.ResumeFrom
	if r.st.Checkpoint != "" {
		resume = r.st.Checkpoint
	}
	spec, err := r.spec(resume)
	if err != nil {
		return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidTrial, err)
	}
	proc, err := a.Launcher.Launch(ctx, spec)
	if err != nil {
		// The message carries the whole chain; no cause is attached, so the
		// UI shows it once.
		msg := fmt.Sprintf("trial %s: %v (working directory %s)", in.Trial.TrialID, err, spec.WorkDir)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeInvalidTrial, nil)
		}
		return workflows.RunTrialResult{}, temporal.NewApplicationError(msg, ErrTypeLaunchFailed)
	}
	return r.follow(ctx, proc)
}

type runner struct {
	a       *Activities
	in      workflows.RunTrialInput
	attempt int
	wfID    string
	log     log.Logger
	st      runState

	tail     *cluster.ReportTailer
	last     trial.Report // merged: newest samples, step, metrics
	prof     *jpa.Profiler
	sentAt   time.Time
	unsent   bool
	lastBeat time.Time
}

// spec builds the launch: directories under DataDir, stable per trial.
func (r *runner) spec(resume string) (cluster.LaunchSpec, error) {
	t := r.in.Trial
	if len(t.Command) == 0 {
		return cluster.LaunchSpec{}, fmt.Errorf("trial %s: command: empty", t.TrialID)
	}
	params, err := json.Marshal(t.Params)
	if err != nil {
		return cluster.LaunchSpec{}, fmt.Errorf("trial %s: params: %w", t.TrialID, err)
	}
	if params == nil || string(params) == "null" {
		params = []byte("{}")
	}
	dir := filepath.Join(r.a.DataDir, safeName(t.CampaignID), safeName(t.TrialID))
	workDir := t.WorkDir
	if workDir == "" {
		// The spec's default: the worker's directory, so a command like
		// bin/go-mlp means the same as in the shell that started it.
		if workDir, err = os.Getwd(); err != nil {
			return cluster.LaunchSpec{}, fmt.Errorf("trial %s: workdir: %w", t.TrialID, err)
		}
	}
	return cluster.LaunchSpec{
		TrialID:       t.TrialID,
		CampaignID:    t.CampaignID,
		Command:       t.Command,
		WorkDir:       workDir,
		Env:           maps.Clone(t.Env),
		Params:        params,
		Nodes:         r.in.Nodes,
		CheckpointDir: filepath.Join(dir, "checkpoints"),
		ResumeFrom:    resume,
		RunDir:        filepath.Join(dir, "runs", strconv.Itoa(r.in.Run)),
	}, nil
}

// safeName keeps a path element readable and free of separators.
func safeName(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			return c
		}
		return '_'
	}, s)
}

func (r *runner) follow(ctx context.Context, proc cluster.Process) (workflows.RunTrialResult, error) {
	var err error
	if r.tail, err = cluster.NewReportTailer(proc.ReportFile(), r.st.Offset); err != nil {
		proc.Stop(r.in.Trial.GracePeriod)
		return workflows.RunTrialResult{}, fmt.Errorf("trial %s: %w", r.in.Trial.TrialID, err)
	}
	if r.prof, err = jpa.NewProfiler(nil); err != nil {
		return workflows.RunTrialResult{}, err
	}
	r.last.Samples = r.st.Samples
	beat := time.NewTicker(r.a.heartbeatInterval())
	defer beat.Stop()
	for {
		select {
		case <-proc.Done():
			r.poll()
			exit := proc.Exit()
			r.heartbeat(ctx)
			r.sendFinal()
			res := r.result(exit, workflows.RunCompleted)
			if !exit.OK() {
				return res, temporal.NewApplicationError(
					fmt.Sprintf("trial %s: trainer exited with %s (log: %s)", r.in.Trial.TrialID, describe(exit), proc.LogFile()),
					ErrTypeTrainerFailed, res)
			}
			return res, nil
		case <-ctx.Done():
			exit := proc.Stop(r.in.Trial.GracePeriod)
			r.poll()
			r.sendFinal()
			return r.result(exit, workflows.RunStopped), nil
		case <-beat.C:
			r.poll()
			r.heartbeat(ctx)
			// A heartbeat's response may have just cancelled ctx: the
			// ctx.Done branch then sends the last progress, detached.
			if ctx.Err() == nil && r.unsent && r.a.now().Sub(r.sentAt) >= r.a.progressInterval() {
				r.sendProgress(ctx, false)
			}
		}
	}
}

// poll reads new report lines and folds them in.
func (r *runner) poll() {
	reports, err := r.tail.Poll()
	if err != nil {
		r.log.Warn("reading reports", "trial", r.in.Trial.TrialID, "error", err)
	}
	now := r.a.now()
	for _, rep := range reports {
		if rep.Samples >= r.last.Samples {
			r.last.Samples, r.last.Step, r.last.Epoch = rep.Samples, rep.Step, rep.Epoch
		}
		if len(rep.Metrics) > 0 {
			r.last.Metrics = rep.Metrics
		}
		if rep.Checkpoint != "" {
			r.last.Checkpoint = rep.Checkpoint
			r.st.Checkpoint = rep.Checkpoint
		}
		at := now
		if rep.Time > 0 {
			at = time.Unix(0, int64(rep.Time*1e9))
		}
		r.prof.Ingest(jpa.Report{TrialID: r.in.Trial.TrialID, Nodes: len(r.in.Nodes), NodeType: r.in.NodeType, Samples: rep.Samples, Time: at})
		r.unsent = true
	}
	r.st.Offset, r.st.Samples, r.st.Malformed = r.tail.Offset(), r.last.Samples, r.tail.Malformed()
}

func (r *runner) heartbeat(ctx context.Context) {
	activity.RecordHeartbeat(ctx, r.st)
	r.lastBeat = r.a.now()
}

func (r *runner) throughput() (float64, float64) {
	for _, e := range r.prof.Estimates(r.in.Trial.TrialID) {
		if e.Nodes == len(r.in.Nodes) {
			return e.Throughput, e.Spread
		}
	}
	return 0, 0
}

func (r *runner) progress() workflows.Progress {
	tp, spread := r.throughput()
	return workflows.Progress{
		Run:        r.in.Run,
		Attempt:    r.attempt,
		Time:       r.a.now(),
		Nodes:      len(r.in.Nodes),
		Samples:    r.last.Samples,
		Step:       r.last.Step,
		Epoch:      r.last.Epoch,
		Metrics:    r.last.Metrics,
		Checkpoint: r.last.Checkpoint,
		Throughput: tp,
		Spread:     spread,
		Malformed:  r.tail.Malformed(),
	}
}

// sendProgress signals the trial workflow. A failure is logged, not
// fatal: the result and the next progress carry the same state.
func (r *runner) sendProgress(ctx context.Context, final bool) {
	if !r.unsent && !final {
		return
	}
	if r.a.Client == nil {
		return
	}
	r.sentAt, r.unsent = r.a.now(), false
	if err := r.a.Client.SignalWorkflow(ctx, r.wfID, "", workflows.SignalProgress, r.progress()); err != nil {
		r.log.Warn("forwarding progress", "trial", r.in.Trial.TrialID, "error", err)
	}
}

func (r *runner) result(exit cluster.ExitStatus, outcome workflows.RunOutcome) workflows.RunTrialResult {
	return workflows.RunTrialResult{
		Outcome:    outcome,
		Samples:    r.last.Samples,
		Step:       r.last.Step,
		Epoch:      r.last.Epoch,
		Metrics:    r.last.Metrics,
		Checkpoint: r.last.Checkpoint,
		Exit:       exit,
		Malformed:  r.tail.Malformed(),
		Attempt:    r.attempt,
	}
}

func describe(e cluster.ExitStatus) string {
	switch {
	case e.Signal != "" && e.Killed:
		return fmt.Sprintf("signal %s after the grace period", e.Signal)
	case e.Signal != "":
		return "signal " + e.Signal
	default:
		return fmt.Sprintf("exit code %d", e.Code)
	}
}

// sendFinal forwards the last progress in a context detached from the
// activity's: it must arrive even when the activity was cancelled.
func (r *runner) sendFinal() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.sendProgress(ctx, true)
}
