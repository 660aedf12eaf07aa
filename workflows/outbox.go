package workflows

import "go.temporal.io/sdk/workflow"

// outbox keeps the signals a workflow sends to other workflows until the
// server has taken them. A run that closes (completes, or continues as
// new) with a signal still in flight loses it: the pool's assignments did,
// at continue-as-new, and trials then waited forever. The signals that
// nothing waits for go through an outbox, drained before the run closes:
// the pool's assignments; the releases and profiles that trials and
// inline campaigns send the pool; an inline campaign's deregistrations.
//
// The others wait in their own way: a campaign's controls to its trials
// are counted (pendingSignals) and awaited before it closes; a trial's
// final report to its campaign and its deregistration from the pool are
// awaited where they are sent. A trial's progress reports are not kept: a
// lost one is superseded by the next, and the final report by itself
// carries everything.
type outbox struct {
	pending []workflow.Future
}

// send signals workflow id (its current run) and keeps the future.
func (o *outbox) send(ctx workflow.Context, id, signal string, arg any) {
	o.prune()
	o.pending = append(o.pending, workflow.SignalExternalWorkflow(ctx, id, "", signal, arg))
}

// prune drops the signals already delivered (or failed: the target is
// gone, which is not the sender's to fix).
func (o *outbox) prune() {
	kept := o.pending[:0]
	for _, f := range o.pending {
		if !f.IsReady() {
			kept = append(kept, f)
		}
	}
	o.pending = kept
}

// drain waits until every signal sent has been taken by the server; it
// returns the first delivery error, for logging.
func (o *outbox) drain(ctx workflow.Context) error {
	var first error
	for _, f := range o.pending {
		if err := f.Get(ctx, nil); err != nil && first == nil {
			first = err
		}
	}
	o.pending = nil
	return first
}
