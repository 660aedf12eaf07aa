package jpa

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// run is a builder of report sequences: a trial on n nodes training at
// rate samples/s, reporting every 10 s.
type run struct {
	id      string
	typ     string
	t       time.Time
	samples float64
	out     []Progress
}

func newRun(id string) *run { return &run{id: id, t: t0} }

// start reports the current state on n nodes: the first report of a
// (re)start.
func (r *run) start(n int) *run {
	r.out = append(r.out, Progress{TrialID: r.id, Nodes: n, NodeType: r.typ, Samples: r.samples, Time: r.t})
	return r
}

// steady appends k intervals of 10 s at rate on n nodes, one report at the
// end of each.
func (r *run) steady(n, k int, rate float64) *run {
	for i := 0; i < k; i++ {
		r.t = r.t.Add(10 * time.Second)
		r.samples += rate * 10
		r.out = append(r.out, Progress{TrialID: r.id, Nodes: n, NodeType: r.typ, Samples: r.samples, Time: r.t})
	}
	return r
}

// pause advances time without progress (a restart's downtime).
func (r *run) pause(d time.Duration) *run { r.t = r.t.Add(d); return r }

func ingestAll(t *testing.T, p *Profiler, rs []Progress) map[Outcome]int {
	t.Helper()
	got := map[Outcome]int{}
	for _, r := range rs {
		got[p.Ingest(r)]++
	}
	return got
}

func TestIngestDropsWarmupAfterEveryStart(t *testing.T) {
	p, err := NewProfiler(&Config{WarmupIntervals: 2})
	require.NoError(t, err)
	// Warm-up intervals run at a silly rate; they must not show.
	rs := newRun("a").start(1).steady(1, 2, 1).steady(1, 6, 100).out
	// 1 start, 8 intervals: the first two are warm-up.
	got := ingestAll(t, p, rs)
	assert.Equal(t, map[Outcome]int{OutcomeStart: 1, OutcomeWarmup: 2, OutcomeInterval: 6}, got)
	ests := p.Estimates("a")
	require.Len(t, ests, 1)
	assert.Equal(t, 1, ests[0].Nodes)
	assert.InDelta(t, 100, ests[0].Throughput, 1e-9)
	assert.Equal(t, 6, ests[0].Intervals)

	// A restart on 2 nodes opens a new segment with its own warm-up.
	r := &run{id: "a", t: rs[len(rs)-1].Time.Add(time.Minute), samples: rs[len(rs)-1].Samples}
	got = ingestAll(t, p, r.start(2).steady(2, 2, 5).steady(2, 5, 180).out)
	assert.Equal(t, map[Outcome]int{OutcomeStart: 1, OutcomeWarmup: 2, OutcomeInterval: 5}, got)
	ests = p.Estimates("a")
	require.Len(t, ests, 2)
	assert.Equal(t, 2, ests[1].Nodes)
	assert.InDelta(t, 180, ests[1].Throughput, 1e-9)

	// Estimate is one entry of Estimates.
	for _, e := range ests {
		one, ok := p.Estimate("a", e.Nodes, e.NodeType)
		require.True(t, ok)
		assert.Equal(t, e, one)
		rate, ok := p.Rate("a", e.Nodes, e.NodeType)
		require.True(t, ok)
		assert.Equal(t, e.Throughput, rate)
	}
	_, ok := p.Estimate("a", 3, "")
	assert.False(t, ok, "no estimate at a count never run")
	_, ok = p.Estimate("b", 1, "")
	assert.False(t, ok, "no estimate for an unknown trial")
	_, ok = p.Rate("a", 3, "")
	assert.False(t, ok, "no rate at a count never run")
}

func TestIngestWarmupDuration(t *testing.T) {
	p, err := NewProfiler(&Config{WarmupIntervals: -1, Warmup: 25 * time.Second})
	require.NoError(t, err)
	got := ingestAll(t, p, newRun("a").start(4).steady(4, 5, 50).out)
	// Intervals ending at 10 s and 20 s are inside the 25 s warm-up.
	assert.Equal(t, map[Outcome]int{OutcomeStart: 1, OutcomeWarmup: 2, OutcomeInterval: 3}, got)
}

func TestIngestRestartDetection(t *testing.T) {
	p, err := NewProfiler(&Config{WarmupIntervals: -1})
	require.NoError(t, err)
	rs := newRun("a").start(2).steady(2, 3, 10).out
	ingestAll(t, p, rs)
	last := rs[len(rs)-1]
	// Samples going backwards (resumed from an older checkpoint) restart.
	back := last
	back.Time, back.Samples = last.Time.Add(10*time.Second), last.Samples-50
	assert.Equal(t, OutcomeStart, p.Ingest(back))
	// An explicit Restart at the same count and samples also restarts.
	again := back
	again.Time, again.Restart = back.Time.Add(10*time.Second), true
	assert.Equal(t, OutcomeStart, p.Ingest(again))
	// A change of node type restarts.
	typed := again
	typed.Time, typed.NodeType, typed.Restart = again.Time.Add(10*time.Second), "v100", false
	assert.Equal(t, OutcomeStart, p.Ingest(typed))
}

func TestIngestBadReportsAreCountedNotFatal(t *testing.T) {
	p, err := NewProfiler(nil)
	require.NoError(t, err)
	good := Progress{TrialID: "a", Nodes: 1, Samples: 0, Time: t0}
	require.Equal(t, OutcomeStart, p.Ingest(good))
	cases := map[Outcome][]Progress{
		OutcomeInvalid: {
			{TrialID: "", Nodes: 1, Time: t0.Add(time.Second)},
			{TrialID: "a", Nodes: 0, Time: t0.Add(time.Second)},
			{TrialID: "a", Nodes: 1, Samples: math.NaN(), Time: t0.Add(time.Second)},
			{TrialID: "a", Nodes: 1, Samples: math.Inf(1), Time: t0.Add(time.Second)},
			{TrialID: "a", Nodes: 1, Samples: -1, Time: t0.Add(time.Second)},
			{TrialID: "a", Nodes: 1, Samples: 1},
		},
		OutcomeOutOfOrder:   {{TrialID: "a", Nodes: 1, Samples: 5, Time: t0.Add(-time.Second)}},
		OutcomeDuplicate:    {good},
		OutcomeZeroInterval: {{TrialID: "a", Nodes: 1, Samples: 7, Time: t0}},
	}
	for want, rs := range cases {
		for _, r := range rs {
			assert.Equal(t, want, p.Ingest(r), "%+v", r)
		}
	}
	c := p.Counts()
	assert.Equal(t, 6, c[OutcomeInvalid])
	assert.Equal(t, 1, c[OutcomeOutOfOrder])
	assert.Equal(t, 1, c[OutcomeDuplicate])
	assert.Equal(t, 1, c[OutcomeZeroInterval])
	assert.Empty(t, p.Estimates("a"))
}

func TestIngestMedianIsRobust(t *testing.T) {
	p, err := NewProfiler(&Config{WarmupIntervals: -1})
	require.NoError(t, err)
	r := newRun("a").start(1).steady(1, 5, 100)
	// One stalled interval (a checkpoint write) and one burst.
	r.pause(50*time.Second).steady(1, 1, 100)
	r.samples += 5000
	r.steady(1, 5, 100)
	ingestAll(t, p, r.out)
	e := p.Estimates("a")
	require.Len(t, e, 1)
	assert.InDelta(t, 100, e[0].Throughput, 1e-9)
	assert.Less(t, e[0].Spread, 1.0)
}

func TestIngestWindowKeepsRecent(t *testing.T) {
	p, err := NewProfiler(&Config{WarmupIntervals: -1, Window: 5})
	require.NoError(t, err)
	ingestAll(t, p, newRun("a").start(1).steady(1, 10, 50).steady(1, 9, 80).out)
	e := p.Estimates("a")
	require.Len(t, e, 1)
	assert.Equal(t, 5, e[0].Intervals)
	assert.InDelta(t, 80, e[0].Throughput, 1e-9)
}

func TestNewProfilerNamesBadField(t *testing.T) {
	_, err := NewProfiler(&Config{Window: -3})
	require.ErrorIs(t, err, ErrInvalidSettings)
	assert.Contains(t, err.Error(), "Window")
	_, err = NewProfiler(&Config{Warmup: -time.Second})
	assert.Contains(t, err.Error(), "Warmup")
}

func TestRescaleCosts(t *testing.T) {
	p, err := NewProfiler(&Config{WarmupIntervals: 1})
	require.NoError(t, err)
	// Up: 1 → 2 nodes, 30 s stopped, one warm-up interval at half speed.
	// Repeated three times with one slow outlier; the median ignores it.
	r := newRun("a").start(1).steady(1, 5, 100)
	for _, gap := range []time.Duration{30 * time.Second, 30 * time.Second, 300 * time.Second} {
		r.pause(gap).start(2).steady(2, 1, 90).steady(2, 5, 180)
		r.pause(20*time.Second).start(1).steady(1, 1, 50).steady(1, 5, 100)
	}
	ingestAll(t, p, r.out)
	up, down := p.RescaleCosts("a")
	// Up: last 1-node report at t₀, first 2-node report at t₀+30 s, a
	// warm-up interval of 10 s at 90/s, steady at 180/s from t₀+40 s:
	// lost = 40 − 900/180 = 35 s (the 300 s outlier is ignored).
	assert.Equal(t, 3, up.Count)
	assert.InDelta(t, 35, up.Seconds, 1e-9)
	// Down: gap 20 s, warm-up 10 s at 50/s, steady at 100/s: 30 − 5 = 25 s.
	assert.Equal(t, 3, down.Count)
	assert.InDelta(t, 25, down.Seconds, 1e-9)

	// Samples rolled back to a checkpoint count as lost: gap 10 s, and
	// 1000 samples (5 s at the new 200/s) redone: 15 s.
	q, err := NewProfiler(&Config{WarmupIntervals: -1})
	require.NoError(t, err)
	r2 := newRun("b").start(1).steady(1, 3, 100)
	r2.samples -= 1000
	r2.pause(10*time.Second).start(2).steady(2, 3, 200)
	ingestAll(t, q, r2.out)
	up2, down2 := q.RescaleCosts("b")
	require.Equal(t, 1, up2.Count)
	assert.InDelta(t, 15, up2.Seconds, 1e-9)
	assert.Zero(t, down2.Count)
}

// A trial preempted to 0 nodes for an hour and resumed on another count
// has started, not rescaled: the hour is not a rescale cost.
func TestRescaleCostNotMeasuredAcrossPause(t *testing.T) {
	p, err := NewProfiler(nil)
	require.NoError(t, err)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	feed := func(nodes int, start time.Time, samples float64, rate float64, n int, afterPause bool) float64 {
		for i := 0; i < n; i++ {
			p.Ingest(Progress{TrialID: "t", Nodes: nodes, Samples: samples, Time: start.Add(time.Duration(i) * time.Second), AfterPause: afterPause && i == 0})
			samples += rate
		}
		return samples
	}
	s := feed(2, t0, 0, 100, 10, false)
	feed(4, t0.Add(time.Hour), s, 200, 10, true)
	up, down := p.RescaleCosts("t")
	require.Zero(t, up.Count, "no rescale measured across a pause")
	require.Zero(t, down.Count)
	// Without the mark the hour would count.
	s = feed(4, t0.Add(2*time.Hour), s+2000, 200, 10, false)
	feed(2, t0.Add(2*time.Hour+20*time.Second), s, 100, 10, false)
	_, down = p.RescaleCosts("t")
	require.Equal(t, 1, down.Count)
	require.Less(t, down.Seconds, 30.0)
}
