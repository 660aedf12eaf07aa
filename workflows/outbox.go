package workflows

import "go.temporal.io/sdk/workflow"

// outbox keeps the signals a workflow sends to other workflows until the
// server has taken them. A run that closes (completes, or continues as
// new) with a signal still in flight loses it: the pool's assignments did,
// at continue-as-new, and trials then waited forever. Every workflow here
// sends through an outbox and drains it before it closes.
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
