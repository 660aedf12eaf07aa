package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// InlineProfileEvery bounds how often an inline campaign sends its pool a
// new profile of its trials (inliner.measure). An inline run is measured
// once, from its launch to its end as the campaign's workflow sees it, so
// with trials of a second the median of the recent runs moves by the 5 %
// that is news (profileChange) every few trials: a signal to the pool, a
// workflow task of the pool's and events in the campaign's history, which
// made 1,000 one-second trials a fifth slower (docs/benchmarks.md,
// "Orchestration at the limit"). The pool's allocator needs no fresher
// throughput than this for a campaign whose trials all have one size.
const InlineProfileEvery = 30 * time.Second

// profileDue reports whether an inline campaign may send its pool a
// profile now: its first at once, then at most one every
// InlineProfileEvery.
func (x *inliner) profileDue(ctx workflow.Context) bool {
	return x.profAt.IsZero() || workflow.Now(ctx).Sub(x.profAt) >= InlineProfileEvery
}
