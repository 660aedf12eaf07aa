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
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/trial"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Error types of RunTrial failures (temporal.ApplicationError.Type).
const (
	ErrTypeTrainerFailed = "TrainerFailed"
	ErrTypeLaunchFailed  = "LaunchFailed"
)

// quietHeartbeatInterval is how often a quiet run (RunTrialInput.Quiet)
// heartbeats: a cancellation (the pool takes its nodes, the campaign
// pauses) reaches it within this, well under TrialHeartbeatTimeout.
const quietHeartbeatInterval = 5 * time.Second

// runState is RunTrial's heartbeat details. The files of ledger.go are
// the record a retry resumes from; the details only keep the failure count
// should the run's directory be lost.
type runState struct {
	Failures int `json:"failures"`
}

// RunTrial launches one run of a trial's trainer on its nodes and follows
// it until it exits or the activity is cancelled. It tails the report
// file, heartbeats, forwards progress to the trial workflow, and on
// cancellation stops the trainer gracefully (SIGTERM, SIGKILL after the
// grace period) and returns what it reached.
//
// Whatever failed before — the trainer, the worker (SIGKILL, a lost host)
// or the server — an attempt resumes from the newest complete checkpoint
// the trainer reported that still exists (ledger.go): it reads the report
// lines no attempt read before, so a checkpoint written after the last
// heartbeat is not missed, and one the trainer has since deleted is never
// passed on. A run whose trainer already finished is not started again.
// Only the trainer's own failures count against max_restarts; a retry
// because the worker or server was lost does not.
func (a *Activities) RunTrial(ctx context.Context, in workflows.RunTrialInput) (workflows.RunTrialResult, error) {
	info := activity.GetInfo(ctx)
	r := &runner{a: a, in: in, attempt: int(info.Attempt), wfID: info.WorkflowExecution.ID, log: activity.GetLogger(ctx),
		arch: a.archPrediction(in.Trial.Arch())}
	r.pool.cur.Store(&in.PredictedMetrics)
	r.pool.asked = a.now()
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &r.st); err != nil {
			return workflows.RunTrialResult{}, fmt.Errorf("reading heartbeat details: %w", err)
		}
	}
	if err := r.locate(); err != nil {
		return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidTrial, err)
	}
	if a.Launcher == nil {
		err := fmt.Errorf("trial %s: this worker has no nodes (--nodes none): runs go to the agents holding them", in.Trial.TrialID)
		return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidTrial, nil)
	}
	if in.Rank > 0 {
		return r.runRank(ctx)
	}
	// An earlier attempt of this trial still running in this process
	// (its server-side attempt timed out while the server was away) is
	// stopping: wait for it, so two trainers never share the checkpoints.
	unlock, err := a.lockTrial(ctx, r.trialDir, func() { activity.RecordHeartbeat(ctx, r.st) })
	if err != nil {
		return workflows.RunTrialResult{}, err
	}
	defer unlock()
	// Nothing of a dead worker's trainer may write or prune checkpoints
	// while the resume point is chosen. A trial whose checkpoint directory
	// does not exist yet was never launched: nothing can be left of it.
	_, statErr := os.Stat(r.ckptDir)
	fresh := errors.Is(statErr, fs.ErrNotExist)
	if k, ok := a.Launcher.(leftoverKiller); ok && !fresh {
		pids, err := k.KillLeftovers(r.ckptDir)
		if len(pids) > 0 {
			r.log.Warn("killed processes an earlier run of the trial left behind", "trial", in.Trial.TrialID, "pids", pids)
		}
		if err != nil {
			return workflows.RunTrialResult{}, fmt.Errorf("trial %s: %w", in.Trial.TrialID, err)
		}
	}
	resume, err := r.recover()
	if errors.Is(err, errNoSealed) {
		return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidTrial, nil)
	}
	if err != nil {
		return workflows.RunTrialResult{}, fmt.Errorf("trial %s: recovering run %d: %w", in.Trial.TrialID, in.Run, err)
	}
	if r.runLog.Failures > in.Trial.MaxRestarts {
		// The final failure was recorded but its error never reached the
		// server (a lost worker or server): end the run, do not relaunch.
		return r.result(r.runLog.Exit, workflows.RunCompleted), r.finalFailure(ctx)
	}
	if r.runLog.Finished {
		// The trainer finished before a worker or server fault kept the
		// result from the server: report it, do not train again.
		r.heartbeat(ctx)
		r.sendFinal()
		return r.result(r.runLog.Exit, workflows.RunCompleted), nil
	}
	spec, err := r.spec(resume)
	if err != nil {
		return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidTrial, err)
	}
	if spec.Rendezvous, err = r.publishRendezvous(resume); err != nil {
		return workflows.RunTrialResult{}, fmt.Errorf("trial %s: %w", in.Trial.TrialID, err)
	}
	_, sweeps := a.Launcher.(leftoverKiller)
	spec.Swept = sweeps || fresh
	r.logMark = markLog(filepath.Join(spec.RunDir, cluster.LogFileName)) // logtail.go
	// An inline run may have been queued behind the run still training on
	// its nodes (a pipelined campaign): everything above is ready, so its
	// trainer starts the moment the one before it is gone.
	release, afterStop, err := a.gate.acquire(ctx, gateRun{nodes: in.Nodes, wait: in.Quiet,
		self: workflows.RunRef(in.Trial, in.Run), after: in.After}, quietHeartbeatInterval, func() { r.heartbeat(ctx) })
	if err == nil && afterStop {
		// The run before it was stopped (the campaign pauses, stops, loses
		// the nodes): this one most likely is too, and a heartbeat's
		// answer says so before a trainer starts. (Only then: every
		// heartbeat is a write to the campaign's workflow.)
		r.heartbeat(ctx)
		if err = ctx.Err(); err != nil {
			release(true)
		}
	}
	if err != nil {
		return workflows.RunTrialResult{}, stoppedBeforeLaunch(in, err)
	}
	proc, err := a.Launcher.Launch(ctx, spec)
	if err == nil {
		go func() { <-proc.Done(); release(ctx.Err() != nil) }()
	} else {
		release(ctx.Err() != nil)
	}
	if err != nil {
		// The message carries the whole chain; no cause is attached, so the
		// UI shows it once.
		msg := fmt.Sprintf("trial %s: %v (working directory %s)", in.Trial.TrialID, err, spec.WorkDir)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
			errors.Is(err, cluster.ErrNotAllowed) { // refused by the host's --allow-command / --trainer-env-deny
			return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeInvalidTrial, nil)
		}
		if ctx.Err() != nil {
			return workflows.RunTrialResult{}, ctx.Err()
		}
		return workflows.RunTrialResult{}, r.failed(ctx, msg, ErrTypeLaunchFailed, r.result(cluster.ExitStatus{Code: -1}, workflows.RunCompleted))
	}
	if lp, ok := proc.(leftoverReporter); ok && len(lp.LeftoversKilled()) > 0 {
		r.log.Warn("killed processes an earlier run of the trial left behind", "trial", in.Trial.TrialID, "pids", lp.LeftoversKilled())
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
	// arch is the model's prediction for the trial's architecture: every
	// report carries it, calibrated as of that report (predictedMetrics).
	// On an agent host (no model) the reports carry the pool worker's
	// (pool).
	arch archPrediction
	pool poolPrediction

	// Where the trial lives: absolute, derived from validated names.
	trialDir, runDir, ckptDir, workDir string

	ledger trialLedger
	// ledgerSavedAt is when the ledger was last written (recover, then
	// poll); ledgerUnsaved says it has recorded checkpoints since.
	ledgerSavedAt time.Time
	ledgerUnsaved bool
	runLog        runLedger
	followFrom    int64   // report offset where this attempt's trainer starts
	logMark       logMark // where the trainer's log ended before this attempt
	malformed     int     // malformed lines before followFrom

	tail   *cluster.ReportTailer
	last   trial.Report // merged: newest samples, step, metrics; checkpoint = resume point
	sentAt time.Time
	unsent bool
	// crossed is the progress of the first report seen at the budget, and
	// crossedAt when it was seen (trainsPastBudget).
	crossed   float64
	crossedAt time.Time
	// The progress sender (sendProgress): latest progress not sent yet.
	sendCh     chan workflows.Progress
	senderDone chan struct{}
}

// locate derives the trial's directories: DataDir/<campaign>/<trial>,
// with the names as they are (ValidateName's charset makes them distinct
// path elements that stay inside DataDir).
func (r *runner) locate() error {
	t := r.in.Trial
	if err := gleaner.ValidateName("campaign", t.CampaignID); err != nil {
		return fmt.Errorf("trial %s: %w", t.TrialID, err)
	}
	if err := gleaner.ValidateName("trial id", t.TrialID); err != nil {
		return err
	}
	if r.in.Run < 1 {
		return fmt.Errorf("trial %s: run: %d must be at least 1", t.TrialID, r.in.Run)
	}
	if r.in.Rank < 0 || (r.in.Rank > 0 && r.in.Rank >= len(r.in.Hosts)) {
		return fmt.Errorf("trial %s: rank: %d of %d hosts", t.TrialID, r.in.Rank, len(r.in.Hosts))
	}
	for i, h := range r.in.Hosts {
		if len(h.Nodes) == 0 {
			return fmt.Errorf("trial %s: hosts[%d] (agent %s): no nodes", t.TrialID, i, h.Agent)
		}
	}
	data, err := filepath.Abs(r.a.DataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	r.trialDir = filepath.Join(data, t.CampaignID, t.TrialID)
	r.runDir = filepath.Join(r.trialDir, "runs", runDirName(r.in.Run))
	r.ckptDir = filepath.Join(r.trialDir, "checkpoints")
	// The spec's default workdir is the worker's directory, so a command
	// like bin/go-mlp means the same as in the shell that started it.
	if r.workDir, err = filepath.Abs(t.WorkDir); err != nil {
		return fmt.Errorf("trial %s: workdir: %w", t.TrialID, err)
	}
	return nil
}

// recover reads what earlier attempts and runs left on disk and returns
// the checkpoint to resume from.
func (r *runner) recover() (string, error) {
	var err error
	if r.ledger, err = loadLedger(r.trialDir); err != nil {
		return "", err
	}
	if r.ledger.Owner != "" && r.in.Owner != "" && r.ledger.Owner != r.in.Owner {
		// Left by an earlier campaign of the same name (its workflows are
		// gone from the server): keep it, but never resume from it.
		aside := fmt.Sprintf("%s.replaced-%s", r.trialDir, r.a.now().UTC().Format("20060102T150405.000000000"))
		if err := os.Rename(r.trialDir, aside); err != nil {
			return "", fmt.Errorf("moving aside an earlier trial's directory: %w", err)
		}
		r.log.Warn("the trial directory belonged to an earlier trial of the same name; moved aside", "trial", r.in.Trial.TrialID, "to", aside)
		r.ledger = trialLedger{Read: map[string]int64{}}
	}
	if r.ledger.Owner == "" {
		r.ledger.Owner = r.in.Owner
	}
	if err := r.ledger.catchUp(r.trialDir, r.ckptDir, r.workDir, r.in.Run); err != nil {
		return "", err
	}
	if r.runLog, err = loadRunLedger(r.runDir); err != nil {
		return "", err
	}
	r.runLog.Failures = max(r.runLog.Failures, r.st.Failures)
	r.st.Failures = r.runLog.Failures
	// This run's reports so far (an earlier attempt's), for its latest
	// counters and metrics; the profiler sees only this attempt's lines.
	tail, err := cluster.NewReportTailer(filepath.Join(r.runDir, cluster.ReportFileName), 0)
	if err != nil {
		return "", err
	}
	reports, err := tail.Poll()
	if err != nil {
		return "", err
	}
	mergeReports(&r.last, reports)
	r.followFrom, r.malformed = tail.Offset(), tail.Malformed()
	if err := endLine(tail.Path(), r.followFrom); err != nil {
		return "", err
	}
	if err := os.MkdirAll(r.trialDir, 0o755); err != nil {
		return "", err
	}
	if err := r.ledger.save(r.trialDir); err != nil {
		return "", err
	}
	r.ledgerSavedAt = r.a.now() // up to date: the run's first checkpoints wait
	resume := r.ledger.resumePoint(r.ckptDir)
	if resume == "" && r.in.ResumeFrom != "" {
		// Reported on a worker whose data directory this is not (the
		// ledger has no record): still only if it is there and inside.
		if abs, err := checkCheckpoint(r.ckptDir, r.workDir, r.in.ResumeFrom); err == nil {
			resume = abs
		}
	}
	if resume == "" && r.in.Trial.From != "" {
		if resume, err = r.startFrom(); err != nil {
			return "", err
		}
	}
	r.last.Checkpoint = resume
	return resume, nil
}

// spec builds the launch.
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
	return cluster.LaunchSpec{
		TrialID:       t.TrialID,
		CampaignID:    t.CampaignID,
		Command:       t.Command,
		WorkDir:       r.workDir,
		Env:           maps.Clone(t.Env),
		Params:        params,
		Nodes:         r.localNodes(),
		AllNodes:      r.in.Nodes,
		SocketIfname:  r.a.SocketIfname,
		CheckpointDir: r.ckptDir,
		ResumeFrom:    resume,
		RunDir:        r.runDir,
		Budget:        t.Budget,
		BudgetUnit:    t.BudgetUnit,
	}, nil
}

// failed records a failure of the trainer (or of its launch) in the run's
// ledger and returns the error for it: retryable while the trial has
// restarts left, else final.
func (r *runner) failed(ctx context.Context, msg, errType string, res workflows.RunTrialResult) error {
	r.runLog.Failures++
	r.runLog.Exit, r.runLog.Error, r.runLog.ErrorType = res.Exit, msg, errType
	r.st.Failures = r.runLog.Failures
	if err := r.runLog.save(r.runDir); err != nil {
		r.log.Warn("recording a trainer failure", "trial", r.in.Trial.TrialID, "error", err)
	}
	r.heartbeat(ctx)
	res.Failures = r.runLog.Failures
	if r.runLog.Failures > r.in.Trial.MaxRestarts {
		return r.finalFailure(ctx)
	}
	return temporal.NewApplicationError(msg, errType, res)
}

// finalFailure is the error that ends a run whose trainer failed more
// than max_restarts times, as run.json recorded the last failure.
func (r *runner) finalFailure(ctx context.Context) error {
	res := r.result(r.runLog.Exit, workflows.RunCompleted)
	msg := withFirstLine(r.runLog.Error, fmt.Sprintf("; trial.max_restarts: %d reached", r.in.Trial.MaxRestarts))
	errType := r.runLog.ErrorType
	if errType == "" {
		errType = ErrTypeTrainerFailed
	}
	return temporal.NewNonRetryableApplicationError(msg, errType, nil, res)
}

func (r *runner) follow(ctx context.Context, proc cluster.Process) (workflows.RunTrialResult, error) {
	var err error
	if r.tail, err = cluster.NewReportTailer(proc.ReportFile(), r.followFrom); err != nil {
		proc.Stop(r.in.Trial.GracePeriod)
		return workflows.RunTrialResult{}, fmt.Errorf("trial %s: %w", r.in.Trial.TrialID, err)
	}
	beat := time.NewTicker(r.a.heartbeatInterval())
	defer beat.Stop()
	beatAt := r.a.now()
	stop := r.stopping(ctx)
	for {
		select {
		case <-proc.Done():
			return r.exited(ctx, proc)
		case <-stop:
			select {
			case <-proc.Done():
				// It finished as the stop came: a finish, not a stop.
				return r.exited(ctx, proc)
			default:
			}
			exit := proc.Stop(r.in.Trial.GracePeriod)
			r.poll()
			r.seal()
			r.sendFinal()
			return r.result(exit, workflows.RunStopped), nil
		case <-beat.C:
			r.poll()
			if r.trainsPastBudget() {
				return r.stoppedAtBudget(ctx, proc)
			}
			// A quiet run (an inline trial) heartbeats only every
			// quietHeartbeatInterval: every heartbeat is a write to its
			// campaign's workflow, which all its trials share, and a short
			// trial then sends none (liveness: TrialHeartbeatTimeout).
			if now := r.a.now(); !r.in.Quiet || now.Sub(beatAt) >= quietHeartbeatInterval {
				r.heartbeat(ctx)
				beatAt = now
			}
			// A heartbeat's response may have just cancelled ctx: the
			// ctx.Done branch then sends the last progress, detached.
			if ctx.Err() == nil && r.unsent && r.a.now().Sub(r.sentAt) >= r.a.progressInterval() {
				r.sendProgress(ctx)
			}
		}
	}
}

// stoppedAtBudget ends a run whose trainer trains past its budget (it does
// not read GLEANER_BUDGET): stopped gracefully here, within a heartbeat
// interval of the report that crossed it rather than a round trip through
// the workflow, the run counts as finished at its budget.
func (r *runner) stoppedAtBudget(ctx context.Context, proc cluster.Process) (workflows.RunTrialResult, error) {
	r.log.Info("the trainer reached its budget without exiting: stopping it", "trial", r.in.Trial.TrialID,
		"budget", r.in.Trial.Budget, "unit", r.in.Trial.BudgetUnit)
	exit := proc.Stop(r.in.Trial.GracePeriod)
	r.poll()
	r.seal()
	r.runLog.Finished, r.runLog.Exit = true, exit
	if err := r.runLog.save(r.runDir); err != nil {
		r.log.Warn("recording the trainer's stop at its budget", "trial", r.in.Trial.TrialID, "error", err)
	}
	r.heartbeat(ctx)
	r.sendFinal()
	return r.result(exit, workflows.RunCompleted), nil
}

// exited ends a run whose trainer exited by itself.
func (r *runner) exited(ctx context.Context, proc cluster.Process) (workflows.RunTrialResult, error) {
	r.poll()
	exit := proc.Exit()
	if r.a.leaving() {
		// The batch scheduler took the host back and signalled the trainer
		// with the agent: it checkpointed and stopped, whatever its exit.
		r.log.Info("trainer exited while the host is given back: a stop", "trial", r.in.Trial.TrialID, "exit", describe(exit))
		r.sendFinal()
		return r.result(exit, workflows.RunStopped), nil
	}
	if !exit.OK() {
		err := r.failed(ctx, fmt.Sprintf("trial %s: trainer exited with %s (log: %s)", r.in.Trial.TrialID, describe(exit), proc.LogFile())+r.logMark.tail(proc.LogFile()),
			ErrTypeTrainerFailed, r.result(exit, workflows.RunCompleted))
		r.sendFinal()
		return r.result(exit, workflows.RunCompleted), err
	}
	r.seal()
	// Recorded before anything talks to the server: a retry after a fault
	// now returns this instead of training again.
	r.runLog.Finished, r.runLog.Exit = true, exit
	if err := r.runLog.save(r.runDir); err != nil {
		r.log.Warn("recording the trainer's exit", "trial", r.in.Trial.TrialID, "error", err)
	}
	if !r.in.Quiet { // the result follows at once
		r.heartbeat(ctx)
	}
	r.sendFinal()
	return r.result(exit, workflows.RunCompleted), nil
}

// ledgerSaveEvery is the most often a run writes ledger.json for the
// checkpoints its trainer reports. The file only spares a later run
// re-reading report lines (catchUp reads those after Read again, and
// finds the same checkpoints); a trainer checkpointing every half second
// cost a write each.
const ledgerSaveEvery = 10 * time.Second

// poll reads new report lines and folds them in. A reported checkpoint
// becomes the resume point only once checked (checkCheckpoint); the
// ledger keeps it, written to ledger.json at most every ledgerSaveEvery
// (a run after a lost worker reads the rest from the report file).
func (r *runner) poll() {
	reports, err := r.tail.Poll()
	if err != nil {
		r.log.Warn("reading reports", "trial", r.in.Trial.TrialID, "error", err)
	}
	ledgerDirty := r.ledger.record(reports, r.ckptDir, r.workDir) > 0
	if len(r.ledger.Checkpoints) > 0 {
		r.last.Checkpoint = r.ledger.Checkpoints[0].Path
	}
	mergeReports(&r.last, reports)
	if len(reports) > 0 {
		r.unsent = true
	}
	if ledgerDirty {
		r.ledger.Read[runDirName(r.in.Run)] = r.tail.Offset()
		r.ledgerUnsaved = true
	}
	if now := r.a.now(); r.ledgerUnsaved && now.Sub(r.ledgerSavedAt) >= ledgerSaveEvery {
		r.ledgerUnsaved, r.ledgerSavedAt = false, now
		if err := r.ledger.save(r.trialDir); err != nil {
			r.log.Warn("recording checkpoints", "trial", r.in.Trial.TrialID, "error", err)
		}
	}
}

func (r *runner) heartbeat(ctx context.Context) {
	activity.RecordHeartbeat(ctx, r.st)
}

func (r *runner) progress() workflows.Progress {
	return workflows.Progress{
		Run:        r.in.Run,
		Attempt:    r.attempt,
		Time:       r.a.now(),
		Nodes:      len(r.in.Nodes),
		Samples:    r.last.Samples,
		Step:       r.last.Step,
		Epoch:      r.last.Epoch,
		Metrics:    withPredicted(r.last.Metrics, r.predictions()),
		Checkpoint: r.last.Checkpoint,
		Malformed:  r.malformedCount(),
		Failures:   r.runLog.Failures,
		Model:      r.last.Model,
		Batch:      r.last.Batch,

		BadCheckpoints: r.ledger.Bad,
		BadCheckpoint:  r.ledger.LastBad,
	}
}

func (r *runner) malformedCount() int {
	if r.tail == nil {
		return r.malformed
	}
	return r.malformed + r.tail.Malformed()
}

// sendProgress queues the latest progress for the trial workflow. The
// signal goes out from the sender goroutine, so a server that does not
// answer never holds up the loop that notices the trainer's exit, a
// cancellation or the next heartbeat; progress not sent yet is replaced
// by the newer. A failure is logged, not fatal: the result and the next
// progress carry the same state.
func (r *runner) sendProgress(ctx context.Context) {
	if !r.unsent || r.a.Client == nil {
		return
	}
	r.sentAt, r.unsent = r.a.now(), false
	if r.sendCh == nil {
		r.sendCh, r.senderDone = make(chan workflows.Progress, 1), make(chan struct{})
		go r.sender(ctx)
	}
	select {
	case <-r.sendCh: // superseded before it went out
	default:
	}
	r.sendCh <- r.progress()
}

func (r *runner) sender(ctx context.Context) {
	defer close(r.senderDone)
	for pr := range r.sendCh {
		r.signal(ctx, pr)
		r.refreshPredictions(ctx)
	}
}

func (r *runner) signal(ctx context.Context, pr workflows.Progress) {
	if r.in.Quiet {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.a.progressTimeout())
	defer cancel()
	if err := r.a.Client.SignalWorkflow(ctx, r.wfID, "", workflows.SignalProgress, pr); err != nil {
		r.log.Warn("forwarding progress", "trial", r.in.Trial.TrialID, "error", err)
	}
}

func (r *runner) result(exit cluster.ExitStatus, outcome workflows.RunOutcome) workflows.RunTrialResult {
	r.finalPredictions()
	return workflows.RunTrialResult{
		Outcome:    outcome,
		Samples:    r.last.Samples,
		Step:       r.last.Step,
		Epoch:      r.last.Epoch,
		Metrics:    withPredicted(r.last.Metrics, r.predictions()),
		Checkpoint: r.last.Checkpoint,
		Exit:       exit,
		Malformed:  r.malformedCount(),
		Attempt:    r.attempt,
		Failures:   r.runLog.Failures,

		BadCheckpoints: r.ledger.Bad,
		BadCheckpoint:  r.ledger.LastBad,
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

// sendFinal forwards the last progress, after any still in flight, in a
// context detached from the activity's: it must arrive even when the
// activity was cancelled.
func (r *runner) sendFinal() {
	if r.sendCh != nil {
		close(r.sendCh)
		<-r.senderDone // at most ProgressTimeout
		r.sendCh = nil
	}
	if r.a.Client == nil {
		return
	}
	r.finalPredictions()
	r.signal(context.Background(), r.progress())
}

// stoppedBeforeLaunch is the error of a run cancelled before its trainer
// started (a queued run of a pipelined campaign that pauses, stops or
// continues as new): still a cancellation for the server (it wraps
// context.Canceled), but benign, so that the SDK does not log an
// "Activity error." for every queued run of every continue-as-new.
func stoppedBeforeLaunch(in workflows.RunTrialInput, err error) error {
	if !errors.Is(err, context.Canceled) {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(
		fmt.Sprintf("trial %s: run %d stopped before its trainer started", in.Trial.TrialID, in.Run), gleaner.ErrTypeRunCanceled,
		temporal.ApplicationErrorOptions{Cause: err, Category: temporal.ApplicationErrorCategoryBenign})
}
