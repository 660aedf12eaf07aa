package workflows

import (
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Error types of a run on several hosts (RunTrialInput.Hosts > 1).
const (
	// ErrTypeRankFailed: a rank's trainer failed (or exited before rank
	// 0): a trainer failure, counted against max_restarts.
	ErrTypeRankFailed = "RankFailed"
	// ErrTypeHostLost: a rank's agent stopped answering (its activity
	// timed out): a fault, not counted against max_restarts.
	ErrTypeHostLost = "HostLost"
)

// runGroup runs a trial's run on several hosts: one RunTrial per host, on
// the task queue of the agent holding its nodes, rank 0 first. Rank 0
// ending, or any rank failing, ends the run: the others are cancelled
// (their trainers get SIGTERM and the grace period), and the returned
// future settles with rank 0's result, or with an error naming the rank
// that failed and carrying rank 0's result. Ranks are not retried one by
// one: a single restarted rank cannot rejoin its group, so the whole run
// starts again (groupFailed).
func runGroup(ctx, actx workflow.Context, in RunTrialInput) workflow.Future {
	done, set := workflow.NewFuture(ctx)
	gctx, cancelRanks := workflow.WithCancel(workflow.WithRetryPolicy(actx, temporal.RetryPolicy{MaximumAttempts: 1}))
	ranks := make([]workflow.Future, len(in.Hosts))
	for r, h := range in.Hosts {
		rin := in
		rin.Rank = r
		ranks[r] = workflow.ExecuteActivity(workflow.WithTaskQueue(gctx, h.TaskQueue), RunTrialActivityName, rin)
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		// Wait for rank 0, or for a rank to fail. Ranks that exit 0 first
		// are done with the run (they finish together with rank 0, which
		// still writes the last checkpoint and report).
		first := -1
		errs := make([]error, len(ranks))
		ended := make([]bool, len(ranks))
		results := make([]RunTrialResult, len(ranks))
		// peerStopped: a rank was stopped before rank 0 ended (its agent
		// left): its trainer told the others to stop, so rank 0's trainer
		// exiting 0 is a stop, not the end of training.
		peerStopped := false
		sel := workflow.NewSelector(ctx)
		for r, f := range ranks {
			sel.AddFuture(f, func(f workflow.Future) {
				ended[r] = true
				errs[r] = f.Get(ctx, &results[r])
				if r > 0 && errs[r] == nil && results[r].Outcome == RunStopped && !ended[0] {
					peerStopped = true
				}
				if first < 0 && (r == 0 || errs[r] != nil) {
					first = r
				}
			})
		}
		for first < 0 && slices.Contains(ended, false) {
			sel.Select(ctx)
		}
		if first < 0 {
			first = 0
		}
		cancelRanks()
		for r, f := range ranks {
			if !ended[r] {
				errs[r] = f.Get(ctx, &results[r])
			}
		}
		res := results[0]
		if errs[0] != nil {
			var app *temporal.ApplicationError
			if errors.As(errs[0], &app) && app.HasDetails() {
				_ = app.Details(&res)
			}
		}
		if peerStopped {
			// A rank's agent stopped it (it left): the trainers agreed on
			// the stop and exited 0, or lost their peer and failed. Either
			// way the run was stopped, not finished and not failed.
			res.Outcome = RunStopped
			set.Set(res, nil)
			return
		}
		set.Set(groupResult(in, first, res, errs))
	})
	return done
}

// groupResult is the outcome of a group in which rank first ended the
// run: rank 0, or the first rank that failed.
func groupResult(in RunTrialInput, first int, res RunTrialResult, errs []error) (RunTrialResult, error) {
	var canceled *temporal.CanceledError
	cause := errs[first]
	switch {
	case errors.As(cause, &canceled):
		// The trial stopped the run before the rank started.
		return res, errs[0]
	case first == 0 && cause == nil:
		return res, nil // rank 0 finished or was stopped: the run's result
	}
	// A trial that can never run (its trainer is refused by a host's
	// --allow-command, say) fails, whichever rank found out: a relaunch
	// would be refused again.
	var invalid *temporal.ApplicationError
	if errors.As(cause, &invalid) && invalid.Type() == ErrTypeInvalidTrial {
		return res, cause
	}
	h := in.Hosts[first]
	errType := ErrTypeRankFailed
	msg := fmt.Sprintf("rank %d (agent %s): %s", first, h.Agent, cause.Error())
	var app *temporal.ApplicationError
	if errors.As(cause, &app) {
		msg = fmt.Sprintf("rank %d (agent %s): %s", first, h.Agent, app.Message())
	}
	if isTimeout(cause) {
		errType = ErrTypeHostLost
	}
	return RunTrialResult{}, temporal.NewNonRetryableApplicationError(msg, errType, nil, res)
}

// groupFailed handles a run on several hosts that ended with a failed
// rank or a lost host: it counts the restart or the fault and asks for a
// relaunch from the newest checkpoint, or fails the trial once
// max_restarts is used up. It reports whether it handled err.
func (t *trial) groupFailed(ctx workflow.Context, run *activeRun, err error) bool {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || (app.Type() != ErrTypeRankFailed && app.Type() != ErrTypeHostLost) {
		return false
	}
	var res RunTrialResult
	if app.HasDetails() && app.Details(&res) == nil {
		t.core.absorbResult(run.run, res) // (its failures are counted here, per assignment)
	}
	logger := workflow.GetLogger(ctx)
	if app.Type() == ErrTypeHostLost {
		if t.hostFaults++; t.hostFaults > TrialFaultRetries {
			return false
		}
		logger.Warn("a host of the run was lost; starting the run again", "trial", t.in.TrialID, "run", run.run, "error", app.Error())
	} else {
		// As on one host: max_restarts relaunches after failures on the
		// same nodes, the failure after them ends the trial.
		if t.groupFails++; t.groupFails > t.in.MaxRestarts {
			t.end(ctx, TrialFailed, fmt.Sprintf("%s; trial.max_restarts: %d reached", app.Message(), t.in.MaxRestarts))
			return true
		}
		t.core.p.Restarts++
		logger.Warn("a rank failed; restarting the run", "trial", t.in.TrialID, "run", run.run, "error", app.Error())
	}
	t.relaunch = true
	return true
}
