package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
)

// whyOf is a timeline without its times: states, nodes and why.
func whyOf(spans []TrialSpan) []TrialSpan {
	out := make([]TrialSpan, len(spans))
	for i, s := range spans {
		s.From = time.Time{}
		out[i] = s
	}
	return out
}

// inlineTimelineRun runs an inline campaign of two trials, one at a time
// on one node: the first is preempted to 0 nodes a second after it
// starts, resumed a second after the campaign confirms the release, and
// completes; the second is held until the campaign is stopped, a second
// after the campaign was asked for its trials (QueryTrials) while it ran.
func inlineTimelineRun(t *testing.T, recordsVersion workflow.Version) (h *inlineHarness, asked []TrialStatus, start time.Time) {
	h = newInlineHarness(t, 1, 20*time.Millisecond)
	h.env.OnGetVersion("inline-record-spans", workflow.DefaultVersion, 1).Return(recordsVersion)
	var stop updateResult
	h.hold = func(i int, in RunTrialInput) bool {
		switch i {
		case 0:
			h.env.RegisterDelayedCallback(func() { h.assign(0) }, time.Second)
			return true
		case 2:
			h.env.RegisterDelayedCallback(func() {
				v, err := h.env.QueryWorkflow(QueryTrials)
				require.NoError(t, err)
				require.NoError(t, v.Get(&asked))
				update(h.env, UpdateStop, &stop)
			}, time.Second)
			return true
		}
		return false
	}
	h.onReleased = func() { h.env.RegisterDelayedCallback(func() { h.assign(1) }, time.Second) }
	start = h.env.Now()
	in := inlineSpec(2, 1)
	in.Spec.Search.Algorithm = "tpe" // not pipelined
	h.env.ExecuteWorkflow(CampaignWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	require.NoError(t, stop.err)
	return h, asked, start
}

// An inline trial's timeline is the trial core's, as a trial workflow's:
// started, preempted to 0 nodes, resumed and completed, and in flight
// with its last span open. QueryTrials and the records carry it.
func TestInlineTrialTimeline(t *testing.T) {
	h, asked, start := inlineTimelineRun(t, 1)
	require.Len(t, h.launches, 3)

	require.Len(t, h.records, 1)
	recs := h.records[0].Trials
	require.Len(t, recs, 2)
	first, second := recs[0], recs[1]
	require.Equal(t, "t00001", first.TrialID)
	require.Equal(t, TrialCompleted, first.State)
	require.Equal(t, []TrialSpan{
		{State: TrialPending, Why: gleaner.SpanStart},
		{State: TrialRunning, Nodes: 1, Why: gleaner.SpanStart},
		{State: TrialPaused, Why: gleaner.SpanPreempt},
		{State: TrialRunning, Nodes: 1, Why: gleaner.SpanResume},
		{State: TrialCompleted, Why: gleaner.SpanEnd},
	}, whyOf(first.Spans))
	// When: the pool took the node a second after the launch, and gave it
	// again a second after the campaign confirmed the release.
	s := first.Spans
	require.Equal(t, spanTime(start), first.Started)
	require.Equal(t, first.Started, s[0].From)
	require.Equal(t, time.Second, s[2].From.Sub(s[1].From))
	require.Equal(t, time.Second, s[3].From.Sub(s[2].From))
	require.False(t, s[4].From.Before(s[3].From))
	require.Equal(t, s[4].From, first.Ended)
	require.True(t, first.Started.Before(first.Ended))

	// The second got the node the first left in the same workflow task:
	// it never waited.
	require.Equal(t, TrialStopped, second.State)
	require.Equal(t, []TrialSpan{
		{State: TrialRunning, Nodes: 1, Why: gleaner.SpanStart},
		{State: TrialStopped, Why: gleaner.SpanEnd},
	}, whyOf(second.Spans))
	require.Equal(t, first.Ended, second.Started)
	require.Equal(t, second.Started, second.Spans[0].From)
	require.Equal(t, time.Second, second.Ended.Sub(second.Started), "stopped a second after it started")

	// Asked while the second ran: the first ended (its record), the
	// second in flight, its last span open.
	require.Len(t, asked, 2)
	byID := map[string]TrialStatus{}
	for _, a := range asked {
		byID[a.TrialID] = a
	}
	require.Equal(t, first.Spans, byID["t00001"].Spans)
	require.Equal(t, first.Started, byID["t00001"].Started)
	require.Equal(t, first.Ended, byID["t00001"].Ended)
	running := byID["t00002"]
	require.Equal(t, TrialRunning, running.State)
	require.Zero(t, running.Ended)
	require.False(t, running.Started.IsZero())
	require.Equal(t, second.Spans[:1], running.Spans)
}

// A campaign run that began before records carried the timeline keeps
// them as they were (they are cut by size: its history must replay), and
// still shows its in-flight trials' timelines.
func TestInlineRecordsOfARunFromBeforeTimelines(t *testing.T) {
	h, asked, _ := inlineTimelineRun(t, workflow.DefaultVersion)
	require.Len(t, h.records, 1)
	for _, r := range h.records[0].Trials {
		require.Empty(t, r.Spans, r.TrialID)
		require.Zero(t, r.Started, r.TrialID)
		require.Zero(t, r.Ended, r.TrialID)
	}
	for _, a := range asked {
		if a.State == TrialRunning {
			require.NotEmpty(t, a.Spans)
		}
	}
}

// An inline campaign carries its trials' timelines across
// continue-as-new, compactly.
func TestInlineCampaignCarriesTimelinesAcrossContinueAsNew(t *testing.T) {
	h := newInlineHarness(t, 2, 20*time.Millisecond)
	h.hold = func(i int, _ RunTrialInput) bool {
		if i == 4 {
			h.env.RegisterDelayedCallback(func() { h.env.SetCurrentHistoryLength(500) }, time.Millisecond)
		}
		return i >= 3
	}
	in := inlineSpec(12, 2)
	in.HistoryThreshold = 400
	in.Tuning = &Tuning{DrainWait: time.Second}
	h.env.ExecuteWorkflow(CampaignWorkflowName, in)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, h.env.GetWorkflowError(), &can)
	var next CampaignInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotEmpty(t, next.State.Inline.Trials)
	for _, tr := range next.State.Inline.Trials {
		require.NotEmpty(t, tr.Progress.Spans, tr.Input.TrialID)
		require.False(t, tr.Progress.Started.IsZero(), tr.Input.TrialID)
		last := tr.Progress.Spans[len(tr.Progress.Spans)-1]
		require.Equal(t, tr.Progress.State, last.State, tr.Input.TrialID)
	}
	// Written as a TrialTimeline, read back the same.
	tr := next.State.Inline.Trials[0]
	tr.Progress.Spans = append(tr.Progress.Spans, TrialSpan{From: spanT0, State: TrialRunning, Nodes: 3, Why: gleaner.SpanRescale})
	raw, err := json.Marshal(tr)
	require.NoError(t, err)
	require.NotContains(t, string(raw), `"spans"`)
	require.Contains(t, string(raw), `"timeline":"`)
	var back InlineTrial
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, tr, back)
}

// A pipelined campaign's trials wait in line pending while their run is
// queued behind another (its activity is scheduled, its trainer not
// started), and run only once they train.
func TestPipelinedTrialTimeline(t *testing.T) {
	h := newInlineHarness(t, 1, 20*time.Millisecond)
	in := inlineSpec(3, 1)
	require.True(t, Pipelined(in.Spec.WithDefaults()))
	var asked []TrialStatus
	var stop updateResult
	h.hold = func(i int, _ RunTrialInput) bool {
		if i == 0 {
			h.env.RegisterDelayedCallback(func() {
				v, err := h.env.QueryWorkflow(QueryTrials)
				require.NoError(t, err)
				require.NoError(t, v.Get(&asked))
				update(h.env, UpdateStop, &stop)
			}, time.Second)
		}
		return i == 0
	}
	h.env.ExecuteWorkflow(CampaignWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	require.NoError(t, stop.err)

	// (The first waited for the campaign's nodes, as long as the pool took
	// to answer: a millisecond here.)
	pending := TrialSpan{State: TrialPending, Why: gleaner.SpanStart}
	require.Len(t, asked, 3)
	for _, a := range asked {
		want := []TrialSpan{pending}
		if a.TrialID == "t00001" {
			want = []TrialSpan{pending, {State: TrialRunning, Nodes: 1, Why: gleaner.SpanStart}}
		}
		require.Equal(t, want, whyOf(a.Spans), "%s, queued: %v", a.TrialID, a.TrialID != "t00001")
	}
	var recs []TrialStatus
	for _, r := range h.records {
		recs = append(recs, r.Trials...)
	}
	require.Len(t, recs, 3)
	for _, r := range recs {
		want := []TrialSpan{pending, {State: TrialStopped, Why: gleaner.SpanEnd}}
		if r.TrialID == "t00001" {
			want = []TrialSpan{pending, {State: TrialRunning, Nodes: 1, Why: gleaner.SpanStart}, {State: TrialStopped, Why: gleaner.SpanEnd}}
		}
		require.Equal(t, want, whyOf(r.Spans), r.TrialID)
	}
}

// An inline trial of a paused campaign waits paused, and says why.
func TestInlineTrialTimelineOfAPause(t *testing.T) {
	h := newInlineHarness(t, 1, 20*time.Millisecond)
	var pause, resume updateResult
	h.hold = func(i int, _ RunTrialInput) bool {
		if i == 0 {
			h.env.RegisterDelayedCallback(func() { update(h.env, UpdatePause, &pause) }, time.Second)
			h.env.RegisterDelayedCallback(func() { update(h.env, UpdateResume, &resume) }, 2*time.Second)
		}
		return i == 0
	}
	in := inlineSpec(1, 1)
	in.Spec.Search.Algorithm = "tpe"
	h.env.ExecuteWorkflow(CampaignWorkflowName, in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	require.NoError(t, pause.err)
	require.NoError(t, resume.err)
	require.Len(t, h.records, 1)
	r := h.records[0].Trials[0]
	require.Equal(t, []TrialSpan{
		{State: TrialPending, Why: gleaner.SpanStart},
		{State: TrialRunning, Nodes: 1, Why: gleaner.SpanStart},
		{State: TrialPaused, Why: gleaner.SpanPause},
		{State: TrialRunning, Nodes: 1, Why: gleaner.SpanResume},
		{State: TrialCompleted, Why: gleaner.SpanEnd},
	}, whyOf(r.Spans))
	require.Equal(t, time.Second, r.Spans[2].From.Sub(r.Spans[1].From))
}
