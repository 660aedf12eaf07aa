package pbs

import (
	"context"
	"fmt"
	"time"
)

// A pilot's own job, as its agent sees it.
//
// PBS tells a pilot's agent to leave with a SIGTERM, but not always: when
// the server requeues (preempt_order R, qrerun) or deletes a job it has
// only just sent to the mom, the mom's SIGTERM goes out before the job's
// process exists and reaches nothing. The kill_delay timer still runs,
// and at its end the mom SIGKILLs the job: the agent, meanwhile joined
// and running a trainer, dies with it, and the trainer loses what it
// trained since its last checkpoint. (Seen on OpenPBS 23.06.06 in
// `gleaner pbs-demo`: the scheduler runs a pilot and preempts it in the
// same cycle; the mom logs `signal job with Rerun` before `Started`, the
// SIGKILL kill_delay later.) The server, though, already says so: the job
// is in substate 60 (RERUN) from the requeue request on. So a pilot reads
// its job's state when it starts and leaves on what it says as at a
// SIGTERM (WatchPilot).

// PBS job substates (job_state R), from OpenPBS's src/include/job.h.
const (
	// SubstatePrerun: sent to the mom to run; SubstateRunning: running.
	SubstatePrerun  = 41
	SubstateRunning = 42
	// SubstateExiting to SubstateTerm: the run is ending (exiting,
	// staging out, obit sent, the site's terminate action).
	SubstateExiting = 50
	SubstateTerm    = 59
	// SubstateRerun to SubstateRerun3: the job is being requeued.
	SubstateRerun  = 60
	SubstateRerun3 = 63
)

// Ending says, in words for a log, why the server is ending the job's
// current run — requeueing it, ending it, or done with it — and "" while
// it runs (or has yet to).
func (j Job) Ending() string {
	switch j.State {
	case "R":
	case "E":
		return "exiting"
	case "Q", "H", "W", "T":
		return "back in the queue (state " + j.State + ")"
	case "F", "X":
		return "finished (state " + j.State + ")"
	default: // B, S, U: begun, suspended
		return ""
	}
	switch {
	case j.Substate >= SubstateRerun && j.Substate <= SubstateRerun3:
		return fmt.Sprintf("being requeued (state R, substate %d)", j.Substate)
	case j.Substate >= SubstateExiting && j.Substate <= SubstateTerm:
		return fmt.Sprintf("ending (state R, substate %d)", j.Substate)
	}
	return ""
}

// PilotJob is the job jobID as `qstat -f -F json JOBID` describes it
// (run on the pilot's node).
func PilotJob(ctx context.Context, run Runner, jobID string) (Job, error) {
	out, err := run.Run(ctx, nil, "qstat", "-f", "-F", "json", jobID)
	if err != nil {
		return Job{}, err
	}
	jobs, err := ParseJobs(out, time.UTC)
	if err != nil {
		return Job{}, err
	}
	for _, j := range jobs {
		// One job asked for: its id as the server prints it may carry a
		// longer server name than PBS_JOBID.
		if j.ID == jobID || len(jobs) == 1 {
			return j, nil
		}
	}
	return Job{}, fmt.Errorf("qstat -f -F json %s: the job is not listed", jobID)
}

// RunEndingError is the cause of WatchPilot's context when PBS ends the
// pilot's run and no signal told the agent.
type RunEndingError struct {
	Job    string
	Ending string // Job.Ending
}

func (e *RunEndingError) Error() string {
	return fmt.Sprintf("PBS job %s is %s", e.Job, e.Ending)
}

// PilotWatch is how WatchPilot looks at a pilot's job: at once, then
// every Every until For has passed since the pilot started. The lost
// SIGTERM happens only to a job ended before its process started, so the
// server says so at the first look already; the later ones cover a
// server that had not answered the ending request yet, within any
// kill_delay up to For.
type PilotWatch struct {
	Every, For time.Duration
}

// DefaultPilotWatch is WatchPilot's default: 2 s for a minute.
var DefaultPilotWatch = PilotWatch{Every: 2 * time.Second, For: time.Minute}

// WatchPilot returns ctx, ended with an *RunEndingError cause as soon as
// the pilot's job jobID is ending (Job.Ending). The first look is made
// before it returns: a job PBS already ends comes back ended. A qstat
// that fails is not an ending; it is tried again at the next look.
func WatchPilot(ctx context.Context, run Runner, jobID string, w PilotWatch) (context.Context, context.CancelFunc) {
	if w.Every <= 0 {
		w.Every = DefaultPilotWatch.Every
	}
	wctx, cancel := context.WithCancelCause(ctx)
	look := func() bool {
		j, err := PilotJob(wctx, run, jobID)
		if err != nil {
			return false
		}
		if why := j.Ending(); why != "" {
			cancel(&RunEndingError{Job: jobID, Ending: why})
			return true
		}
		return false
	}
	if look() || w.For <= 0 {
		return wctx, func() { cancel(context.Canceled) }
	}
	go func() {
		tick := time.NewTicker(w.Every)
		defer tick.Stop()
		until := time.NewTimer(w.For)
		defer until.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-until.C:
				return
			case <-tick.C:
				if look() {
					return
				}
			}
		}
	}()
	return wctx, func() { cancel(context.Canceled) }
}
