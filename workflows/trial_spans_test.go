package workflows

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

var spanT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func spanAt(d time.Duration) time.Time { return spanT0.Add(d) }

// span is a TrialSpan for the tests' want lists.
func span(from time.Time, s TrialState, nodes int, why string) TrialSpan {
	return TrialSpan{From: spanTime(from), State: s, Nodes: nodes, Why: why}
}

func nodesN(n int) []string { return nodeNames(n) }

// The core's timeline, event by event: a span per change of state or
// node count, none for a change of neither, each saying why it began.
func TestTrialCoreTimeline(t *testing.T) {
	b := newTrialCore(coreInput(), "wf")
	sec := func(n int) time.Time { return spanAt(time.Duration(n) * time.Second) }
	b.begin(sec(0))
	b.launched(sec(1), nodesN(2), false, false)
	b.launched(sec(2), nodesN(4), true, false)
	b.launched(sec(3), []string{"n10", "n11", "n12", "n13"}, true, false) // other nodes, as many: no span
	b.wait(sec(4), false)                                                 // the pool took every node
	b.launched(sec(5), nodesN(2), false, false)
	b.wait(sec(6), true) // a person paused it
	b.setState(sec(7), b.waiting(), false)
	b.launched(sec(8), nodesN(1), false, false)
	b.launched(sec(9), nodesN(1), false, true) // relaunched after a failure on as many nodes: no span
	b.launched(sec(10), nodesN(2), false, true)
	b.end(sec(11), TrialCompleted, "")

	require.Equal(t, []TrialSpan{
		span(sec(0), TrialPending, 0, gleaner.SpanStart),
		span(sec(1), TrialRunning, 2, gleaner.SpanStart),
		span(sec(2), TrialRunning, 4, gleaner.SpanRescale),
		span(sec(4), TrialPaused, 0, gleaner.SpanPreempt),
		span(sec(5), TrialRunning, 2, gleaner.SpanResume),
		span(sec(6), TrialPaused, 0, gleaner.SpanPause),
		span(sec(8), TrialRunning, 1, gleaner.SpanResume),
		span(sec(10), TrialRunning, 2, gleaner.SpanRestart),
		span(sec(11), TrialCompleted, 0, gleaner.SpanEnd),
	}, b.p.Spans)
	require.Equal(t, sec(0), b.p.Started)
	require.Equal(t, sec(11), b.p.Ended)
	require.Zero(t, b.p.SpansDropped)
}

// A state that lasted no time (changed again in the same workflow task)
// gives way to the next; an end keeps what it ended. Paused before it
// ever ran, a trial waits pending again once resumed.
func TestTrialCoreTimelineSkipsWhatLastedNoTime(t *testing.T) {
	b := newTrialCore(coreInput(), "wf")
	b.begin(spanAt(0))
	b.launched(spanAt(0), nodesN(1), false, false) // nodes at once
	b.wait(spanAt(time.Second), false)
	b.launched(spanAt(time.Second), nodesN(1), false, false) // other nodes at once: it never waited
	b.end(spanAt(time.Second), TrialFailed, "boom")
	require.Equal(t, []TrialSpan{
		span(spanAt(0), TrialRunning, 1, gleaner.SpanStart),
		span(spanAt(time.Second), TrialFailed, 0, gleaner.SpanEnd),
	}, b.p.Spans)
	require.Equal(t, spanAt(0), b.p.Started, "started when it began, whatever its first span")

	b = newTrialCore(coreInput(), "wf")
	b.begin(spanAt(0))
	b.setState(spanAt(time.Second), TrialPaused, true)
	b.setState(spanAt(2*time.Second), b.waiting(), false)
	require.Equal(t, []TrialSpan{
		span(spanAt(0), TrialPending, 0, gleaner.SpanStart),
		span(spanAt(time.Second), TrialPaused, 0, gleaner.SpanPause),
		span(spanAt(2*time.Second), TrialPending, 0, gleaner.SpanResume),
	}, b.p.Spans)
}

// The newest TrialSpansMax spans are kept, a dropped prefix counted; a
// status handed out before keeps what it had.
func TestTrialCoreBoundsItsTimeline(t *testing.T) {
	b := newTrialCore(coreInput(), "wf")
	b.begin(spanAt(0))
	var before []TrialSpan
	n := 1
	for i := 1; i <= TrialSpansMax; i++ {
		b.launched(spanAt(time.Duration(2*i-1)*time.Second), nodesN(1), false, false)
		b.wait(spanAt(time.Duration(2*i)*time.Second), false)
		n += 2
		if n == TrialSpansMax-1 {
			before = b.status().Spans // before any is dropped
		}
	}
	b.end(spanAt(time.Hour), TrialStopped, "")
	n++
	require.Len(t, b.p.Spans, TrialSpansMax)
	require.Equal(t, n-TrialSpansMax, b.p.SpansDropped)
	require.Equal(t, span(spanAt(time.Hour), TrialStopped, 0, gleaner.SpanEnd), b.p.Spans[TrialSpansMax-1])
	for i := 1; i < len(b.p.Spans); i++ {
		require.True(t, b.p.Spans[i-1].From.Before(b.p.Spans[i].From), "oldest first")
	}
	first := time.Duration(n-TrialSpansMax) * time.Second // span k (0-based) began at k s
	require.Equal(t, spanAt(first), b.p.Spans[0].From)
	require.Len(t, before, TrialSpansMax-1)
	require.Equal(t, span(spanAt(0), TrialPending, 0, gleaner.SpanStart), before[0], "a status handed out keeps its spans")
	require.Equal(t, spanAt(0), b.p.Started)
}

// A trial that completed its budget hands its next segment its Started
// and its newest spans; that segment begins where it parked.
func TestTrialCoreCarriesItsTimelineToItsNextSegment(t *testing.T) {
	in := coreInput()
	in.Budget, in.BudgetUnit = 100, gleaner.BudgetSamples
	b := newTrialCore(in, "wf-1")
	b.begin(spanAt(0))
	for i := 1; i <= gleaner.TrialResumeSpansMax; i++ {
		b.launched(spanAt(time.Duration(2*i-1)*time.Second), nodesN(1+i%2), false, false)
		b.wait(spanAt(time.Duration(2*i)*time.Second), false)
	}
	b.launched(spanAt(time.Minute), nodesN(1), false, false)
	b.absorb(100, 1, 0, map[string]float64{"loss": 1}, "/c")
	b.end(spanAt(2*time.Minute), TrialCompleted, "")
	r := b.report("owner", true)
	require.Equal(t, b.p.Spans, r.Spans, "the final report carries the timeline")
	require.Equal(t, spanAt(0), r.Started)
	require.Equal(t, spanAt(2*time.Minute), r.Ended)
	require.NotNil(t, r.Resume)
	require.Equal(t, spanAt(0), r.Resume.Started)
	require.Len(t, r.Resume.Spans, gleaner.TrialResumeSpansMax)
	require.Equal(t, b.p.SpansDropped+len(b.p.Spans)-gleaner.TrialResumeSpansMax, r.Resume.SpansDropped)
	require.Equal(t, b.p.Spans[len(b.p.Spans)-gleaner.TrialResumeSpansMax:], []TrialSpan(r.Resume.Spans))
	require.Empty(t, b.report("owner", false).Spans, "reports while it runs carry no timeline")

	next := r.Resume.Progress()
	in.State, in.Budget = &next, 200
	b2 := newTrialCore(in, "wf-2")
	b2.begin(spanAt(time.Hour))
	require.Equal(t, spanAt(0), b2.p.Started, "a promoted trial keeps its first Started")
	require.Zero(t, b2.p.Ended, "in flight again")
	require.Equal(t, span(spanAt(time.Hour), TrialPaused, 0, gleaner.SpanResume), b2.p.Spans[len(b2.p.Spans)-1],
		"it waits paused, as a trial workflow's own state says")
	b2.launched(spanAt(time.Hour+time.Second), nodesN(1), false, false)
	require.Equal(t, gleaner.SpanResume, b2.p.Spans[len(b2.p.Spans)-1].Why)
}

// The trial workflow's timeline: it starts, is rescaled, preempted to 0
// nodes, resumed and completes. Its status (QueryStatus, open or closed),
// its result and its final report to the campaign all carry it.
func TestTrialWorkflowTimeline(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		if in.Run == 3 {
			return RunTrialResult{Outcome: RunCompleted, Samples: 500, Metrics: map[string]float64{"loss": 0.1}, Attempt: attempt}, nil, false
		}
		return RunTrialResult{}, nil, true
	})
	start := e.Now()
	at := func(d time.Duration) time.Time { return spanTime(start.Add(d)) }
	e.assign(time.Second, 1, "n1", "n2")
	e.checkpointed(1500*time.Millisecond, 1)
	e.assign(2*time.Second, 2, "n1", "n2", "n3", "n4") // rescaled
	e.checkpointed(2500*time.Millisecond, 2)
	e.assign(3*time.Second, 3) // preempted to 0 nodes
	var open TrialStatus
	e.RegisterDelayedCallback(func() { open = e.status(t) }, 3500*time.Millisecond)
	e.assign(4*time.Second, 4, "n7") // resumed; it completes
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())

	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State)
	want := []TrialSpan{
		{From: at(0), State: TrialPending, Why: gleaner.SpanStart},
		{From: at(time.Second), State: TrialRunning, Nodes: 2, Why: gleaner.SpanStart},
		{From: at(2 * time.Second), State: TrialRunning, Nodes: 4, Why: gleaner.SpanRescale},
		{From: at(3 * time.Second), State: TrialPaused, Why: gleaner.SpanPreempt},
		{From: at(4 * time.Second), State: TrialRunning, Nodes: 1, Why: gleaner.SpanResume},
		{From: at(4 * time.Second), State: TrialCompleted, Why: gleaner.SpanEnd},
	}
	s := e.status(t)
	require.Equal(t, want, s.Spans)
	require.Equal(t, at(0), s.Started)
	require.Equal(t, at(4*time.Second), s.Ended)
	require.True(t, s.Started.Before(s.Ended))
	require.Zero(t, s.SpansDropped)
	require.Equal(t, want[:4], open.Spans, "the last span is open while it is in flight")
	require.Zero(t, open.Ended)
	require.Equal(t, at(0), open.Started)

	require.Equal(t, want, r.Spans, "the workflow's result carries the timeline")
	require.Equal(t, s.Started, r.Started)
	require.Equal(t, s.Ended, r.Ended)
	final := e.reports[len(e.reports)-1]
	require.True(t, final.Final)
	require.Equal(t, want, final.Spans, "so does the final report to the campaign")
	for _, rep := range e.reports[:len(e.reports)-1] {
		require.Empty(t, rep.Spans, "reports while it runs carry no timeline")
	}
	// As a client reads it (JSON, the names the dashboard reads).
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	var names map[string]any
	require.NoError(t, json.Unmarshal(raw, &names))
	require.Contains(t, names, "started")
	require.Contains(t, names, "ended")
	require.Len(t, names["spans"], len(want))
	require.Equal(t, map[string]any{"from": at(2 * time.Second).Format(time.RFC3339Nano), "state": "running", "nodes": 4.0, "why": "rescale"},
		names["spans"].([]any)[2])
}

// Paused by a person and resumed, a trial workflow's timeline says so.
func TestTrialWorkflowTimelineOfAPause(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		if in.Run == 2 {
			return RunTrialResult{Outcome: RunCompleted, Samples: 1, Attempt: attempt}, nil, false
		}
		return RunTrialResult{}, nil, true
	})
	start := e.Now()
	at := func(d time.Duration) time.Time { return spanTime(start.Add(d)) }
	e.assign(time.Second, 1, "n1")
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(SignalControl, Control{Action: ControlPause}) }, 2*time.Second)
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(SignalControl, Control{Action: ControlResume}) }, 3*time.Second)
	e.assign(4*time.Second, 2, "n2")
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	require.Equal(t, TrialCompleted, e.result(t).State)
	require.Equal(t, []TrialSpan{
		{From: at(0), State: TrialPending, Why: gleaner.SpanStart},
		{From: at(time.Second), State: TrialRunning, Nodes: 1, Why: gleaner.SpanStart},
		{From: at(2 * time.Second), State: TrialPaused, Why: gleaner.SpanPause},
		{From: at(4 * time.Second), State: TrialRunning, Nodes: 1, Why: gleaner.SpanResume},
		{From: at(4 * time.Second), State: TrialCompleted, Why: gleaner.SpanEnd},
	}, e.status(t).Spans)
}

// A trial preempted and resumed more often than its timeline holds keeps
// the newest TrialSpansMax spans and counts the rest. (It arrives with a
// long timeline, carried across continue-as-new: a cycle of the test
// environment's cancellations takes a second.)
func TestTrialWorkflowTimelineIsBounded(t *testing.T) {
	e := newTrialEnv(t, func(in RunTrialInput, attempt int) (RunTrialResult, error, bool) {
		if len(in.Nodes) == 2 {
			return RunTrialResult{Outcome: RunCompleted, Samples: 1, Attempt: attempt}, nil, false
		}
		return RunTrialResult{}, nil, true
	})
	start := e.Now()
	carried := &TrialProgress{State: TrialPaused, Runs: 31, Samples: 10, Started: spanTime(start.Add(-time.Hour)), SpansDropped: 5,
		Spans: []TrialSpan{{From: spanTime(start.Add(-time.Hour)), State: TrialPending, Why: gleaner.SpanStart}}}
	for i := range (TrialSpansMax - 2) / 2 {
		at := start.Add(-time.Hour + time.Duration(2*i+1)*time.Minute)
		carried.Spans = append(carried.Spans, span(at, TrialRunning, 1, gleaner.SpanResume),
			span(at.Add(time.Minute), TrialPaused, 0, gleaner.SpanPreempt))
	}
	require.Len(t, carried.Spans, TrialSpansMax-1)
	in := trialInput()
	in.State = carried
	e.assign(time.Second, 1, "n1")
	e.assign(2*time.Second, 2, "n1", "n2") // rescaled: it completes there
	e.ExecuteWorkflow(TrialWorkflowName, in)
	r := e.result(t)
	require.Equal(t, TrialCompleted, r.State)
	s := e.status(t)
	require.Len(t, s.Spans, TrialSpansMax)
	require.Equal(t, 5+2, s.SpansDropped, "those dropped before, and the two oldest now")
	require.Equal(t, carried.Spans[2:], s.Spans[:TrialSpansMax-3])
	require.Equal(t, []TrialSpan{
		span(start.Add(time.Second), TrialRunning, 1, gleaner.SpanResume),
		span(start.Add(2*time.Second), TrialRunning, 2, gleaner.SpanRescale),
		span(start.Add(2*time.Second), TrialCompleted, 0, gleaner.SpanEnd),
	}, s.Spans[TrialSpansMax-3:])
	require.Equal(t, carried.Started, s.Started)
	require.Equal(t, r.Spans, s.Spans)
	require.Equal(t, r.SpansDropped, s.SpansDropped)
}

// A promoted trial (its next segment, continued from its resume) keeps
// its first Started and its first segment's spans.
func TestPromotedTrialKeepsItsFirstStarted(t *testing.T) {
	in := trialInput()
	in.Budget, in.BudgetUnit = 1000, gleaner.BudgetSamples
	e := newTrialEnv(t, completes(1000))
	e.assign(time.Second, 1, "n1")
	e.ExecuteWorkflow(TrialWorkflowName, in)
	first := e.result(t)
	require.NotNil(t, first.Resume)
	require.False(t, first.Resume.Started.IsZero())
	require.Len(t, first.Resume.Spans, 3) // pending, running, completed

	// Through the campaign's state (JSON), as a parked trial's resume.
	raw, err := json.Marshal(ParkedTrial{TrialID: in.TrialID, Resume: *first.Resume})
	require.NoError(t, err)
	var parked ParkedTrial
	require.NoError(t, json.Unmarshal(raw, &parked))
	require.Equal(t, *first.Resume, parked.Resume)

	st := parked.Resume.Progress()
	in.State, in.Segment, in.Owner, in.Budget = &st, 2, parked.Resume.Owner, 3000
	e2 := newTrialEnv(t, completes(3000))
	start := e2.Now()
	e2.assign(time.Second, 1, "n2", "n3")
	e2.ExecuteWorkflow(TrialWorkflowName, in)
	second := e2.result(t)
	s := e2.status(t)
	require.Equal(t, first.Started, s.Started, "the first segment's Started")
	require.Equal(t, first.Started, second.Started)
	require.True(t, s.Started.Before(s.Ended))
	require.Equal(t, []TrialSpan(first.Resume.Spans), s.Spans[:3], "the first segment's spans")
	require.Equal(t, []TrialSpan{
		{From: spanTime(start), State: TrialPaused, Why: gleaner.SpanResume},
		{From: spanTime(start.Add(time.Second)), State: TrialRunning, Nodes: 2, Why: gleaner.SpanResume},
		{From: spanTime(start.Add(time.Second)), State: TrialCompleted, Why: gleaner.SpanEnd},
	}, s.Spans[3:])
	require.Equal(t, s.Spans[:6], []TrialSpan(second.Resume.Spans))
}

// A trial that continues as new carries its timeline; the new run adds
// no span of its own until the trial's state changes.
func TestTrialTimelineSurvivesContinueAsNew(t *testing.T) {
	e := newTrialEnv(t, func(RunTrialInput, int) (RunTrialResult, error, bool) { return RunTrialResult{}, nil, true })
	e.assign(time.Second, 1, "n1")
	e.checkpointed(1500*time.Millisecond, 1)
	e.RegisterDelayedCallback(func() { e.SetCurrentHistoryLength(TrialHistoryThreshold + 1) }, 3*time.Second)
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(SignalProgress, Progress{Run: 1, Attempt: 1, Samples: 250}) }, 3100*time.Millisecond)
	e.ExecuteWorkflow(TrialWorkflowName, trialInput())
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, e.GetWorkflowError(), &can)
	var next TrialInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	carried := next.State.Spans
	require.Len(t, carried, 2) // pending, running
	require.False(t, next.State.Started.IsZero())

	e2 := newTrialEnv(t, completes(5000))
	start := e2.Now()
	e2.assign(time.Second, 1, "n4")
	e2.ExecuteWorkflow(TrialWorkflowName, next)
	s := e2.status(t)
	require.Equal(t, next.State.Started, s.Started)
	require.Equal(t, carried, s.Spans[:2])
	// The handover: its trainer stopped, it waited for the pool to assign
	// its nodes again (at 0 nodes, paused, as after a preemption).
	require.Equal(t, []TrialSpan{
		{From: spanTime(start), State: TrialPaused, Why: gleaner.SpanPreempt},
		{From: spanTime(start.Add(time.Second)), State: TrialRunning, Nodes: 1, Why: gleaner.SpanResume},
		{From: spanTime(start.Add(time.Second)), State: TrialCompleted, Why: gleaner.SpanEnd},
	}, s.Spans[2:])
}

// Parked trials with realistic timelines (two segments) stay well under
// Temporal's payload limit at MaxParked, as without them: their resumes
// carry the spans as a compact timeline.
func TestParkedTrialsWithTimelinesAreBounded(t *testing.T) {
	c := parkedCampaign("min")
	for i := range MaxParked {
		b := newTrialCore(TrialInput{TrialID: fmt.Sprintf("t%05d", i+1), Budget: 1e6, BudgetUnit: gleaner.BudgetSamples}, "wf")
		t0 := spanAt(time.Duration(i) * time.Minute)
		b.begin(t0)
		b.launched(t0.Add(3*time.Second), nodesN(4), false, false)
		b.wait(t0.Add(20*time.Minute), false)
		b.launched(t0.Add(25*time.Minute), nodesN(2), false, false)
		b.absorb(1e6, 2604, 4.2, nil, "")
		b.end(t0.Add(time.Hour), TrialCompleted, "")
		next := b.report("0195f8a6-4b8e-7d5c-9a7e-3c2b1a0f9e8d", true).Resume.Progress()
		b = newTrialCore(TrialInput{TrialID: b.in.TrialID, Budget: 3e6, BudgetUnit: gleaner.BudgetSamples, State: &next}, "wf-2")
		b.begin(t0.Add(2 * time.Hour))
		b.launched(t0.Add(2*time.Hour+time.Second), nodesN(8), false, false)
		b.absorb(3e6, 7812, 12.5, nil, "/scratch/gleaner/data/a-campaign-name/t00042/checkpoints/step-000000007812.gob")
		b.end(t0.Add(5*time.Hour), TrialCompleted, "")
		r := b.report("0195f8a6-4b8e-7d5c-9a7e-3c2b1a0f9e8d", true)
		require.Len(t, r.Resume.Spans, 8)
		c.park(ParkedTrial{TrialID: b.in.TrialID, Number: i + 1, Segment: 2, Score: float64(i), Scored: true,
			Params: hpo.Params{"lr": hpo.Float(0.0123456789), "hidden": hpo.Float(64), "batch": hpo.String("128")},
			Resume: *r.Resume})
	}
	raw, err := json.Marshal(c.st)
	require.NoError(t, err)
	require.Less(t, len(raw), 256<<10, "%d bytes of campaign state for %d parked trials", len(raw), MaxParked)
}
