package workflows

import (
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// A trial's timeline (TrialProgress.Started, Ended, Spans), kept by the
// trial core for both runtimes, so a trial workflow and an inline trial
// show the same spans for the same events. The runtimes tell the core
// what happened, with the workflow's clock (workflow.Now); the core
// decides what that does to the timeline:
//   - a span is the trial's state and node count: a new one begins only
//     when either changed (no span for a relaunch on as many nodes);
//   - a span that would last no time (its state changed again in the same
//     workflow task: a run stopped and relaunched at once, a pipelined
//     run queued) gives way to the next one, unless either is terminal
//     (an end keeps what it ended);
//   - the newest TrialSpansMax are kept, a dropped prefix is counted;
//   - Started is set once, when the trial that has not run yet begins;
//     Ended when it reaches a terminal state (its budget included).
// Appending to the trial's state adds no Temporal command, and nothing a
// workflow decides reads the timeline, so no version marker guards it
// (an inline campaign's records, cut by size, are: inline-record-spans).

// TrialSpan is one period of a trial's timeline.
type TrialSpan = gleaner.TrialSpan

// TrialSpansMax bounds TrialProgress.Spans.
const TrialSpansMax = gleaner.TrialSpansMax

// spanTime is a workflow time as the timeline keeps it: UTC, to the
// millisecond (it is read at that precision, and is shorter as JSON).
func spanTime(now time.Time) time.Time { return now.UTC().Truncate(time.Millisecond) }

// begin records that the trial, or its next segment, begins: waiting for
// nodes, in the state it waits in (a segment that continues a parked
// trial waits paused, as a trial that ran does; a trial workflow's own
// state says so at its first step). A run carried across continue-as-new
// while running (its trainer stopped for the handover) keeps its last
// span; the next step says where it is.
func (b *trialCore) begin(now time.Time) {
	if b.p.Started.IsZero() && b.p.Runs == 0 && b.p.Samples == 0 {
		b.p.Started = spanTime(now)
	}
	switch b.p.State {
	case TrialRunning:
	case TrialPending:
		b.markAs(now, b.waiting(), 0, false, false)
	default:
		b.mark(now, false, false)
	}
}

// waiting is the state of a trial that holds no nodes and is not paused:
// pending until it first ran, then paused (preempted to 0 nodes).
func (b *trialCore) waiting() TrialState {
	if b.p.Runs > 0 || b.p.Samples > 0 {
		return TrialPaused
	}
	return TrialPending
}

// setState puts the trial in state s; paused says a person or the
// campaign paused it.
func (b *trialCore) setState(now time.Time, s TrialState, paused bool) {
	b.p.State = s
	if s.Terminal() {
		b.p.Nodes = nil
		b.p.Ended = spanTime(now)
	}
	b.mark(now, paused, false)
}

// wait: the trial's run stopped and it holds no nodes; it waits for some
// (paused: a person or the campaign paused it).
func (b *trialCore) wait(now time.Time, paused bool) {
	b.p.Nodes = nil
	s := b.waiting()
	if paused {
		s = TrialPaused
	}
	b.setState(now, s, paused)
}

// mark records the trial's state and node count as a span when either
// changed since the last one; restart says the run now launched follows
// a failure.
func (b *trialCore) mark(now time.Time, paused, restart bool) {
	b.markAs(now, b.p.State, len(b.p.Nodes), paused, restart)
}

// markAs is mark of the trial in state s on nodes nodes.
func (b *trialCore) markAs(now time.Time, s TrialState, nodes int, paused, restart bool) {
	now = spanTime(now)
	spans := b.p.Spans
	if n := len(spans); n > 0 && spans[n-1].From.Equal(now) && !spans[n-1].State.Terminal() && !s.Terminal() {
		spans = spans[:n-1] // it lasted no time
	}
	var last *TrialSpan
	if n := len(spans); n > 0 {
		last = &spans[n-1]
	}
	if last != nil && last.State == s && last.Nodes == nodes {
		b.p.Spans = spans
		return
	}
	span := TrialSpan{From: now, State: s, Nodes: nodes, Why: spanWhy(last, s, nodes, b.p.Runs, paused, restart)}
	if len(spans) >= TrialSpansMax {
		// A new array: the dropped prefix may be shared with a status
		// or report already handed out.
		drop := len(spans) - TrialSpansMax + 1
		spans = append(make([]TrialSpan, 0, TrialSpansMax), spans[drop:]...)
		b.p.SpansDropped += drop
	}
	b.p.Spans = append(spans, span)
}

// spanWhy is what began a span in state s on nodes nodes, after last
// (nil: none), in a trial that launched runs runs so far.
func spanWhy(last *TrialSpan, s TrialState, nodes, runs int, paused, restart bool) string {
	switch {
	case s.Terminal():
		return gleaner.SpanEnd
	case nodes > 0 && restart:
		return gleaner.SpanRestart
	case nodes > 0 && last != nil && last.Nodes > 0 && !last.State.Terminal():
		return gleaner.SpanRescale // moved straight to another node count
	case nodes > 0 && runs <= 1:
		return gleaner.SpanStart
	case nodes > 0:
		return gleaner.SpanResume
	case paused:
		return gleaner.SpanPause
	case last != nil && (last.Why == gleaner.SpanPause || last.State.Terminal()):
		return gleaner.SpanResume // unpaused, or a parked trial's next segment
	case runs == 0:
		return gleaner.SpanStart
	}
	return gleaner.SpanPreempt
}

// resumeSpans are the newest TrialResumeSpansMax spans of p, for its next
// segment, and the count of those dropped.
func resumeSpans(p TrialProgress) ([]TrialSpan, int) {
	spans, dropped := p.Spans, p.SpansDropped
	if cut := len(spans) - gleaner.TrialResumeSpansMax; cut > 0 {
		spans, dropped = spans[cut:], dropped+cut
	}
	return append([]TrialSpan(nil), spans...), dropped
}
