package slurmdemo

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Monitor samples the scheduler's jobs (every queue, finished jobs
// included while it keeps them: squeue, qstat -x) and the pool every
// Interval into a Timeline.
type Monitor struct {
	Timeline *Timeline
	Jobs     JobLister
	// Pool reads the pool (nil: no pool, the baseline pass).
	Pool     func(ctx context.Context) (*PoolView, error)
	Interval time.Duration // default 1 s
	Clock    Clock
}

// Sample takes one sample: the jobs, then the pool. A pool that does not
// answer leaves Pool nil (no trial seen), and is not an error.
func (m *Monitor) Sample(ctx context.Context) (Snapshot, []Holder, error) {
	clock := m.clock()
	jobs, err := m.Jobs.Jobs(ctx)
	if err != nil {
		return Snapshot{}, nil, fmt.Errorf("monitor: %w", err)
	}
	s := Snapshot{At: clock.Now(), Jobs: jobs}
	if m.Pool != nil {
		if v, err := m.Pool(ctx); err == nil {
			s.Pool = v
		}
	}
	return s, m.Timeline.Observe(s), nil
}

func (m *Monitor) clock() Clock {
	if m.Clock == nil {
		return WallClock{}
	}
	return m.Clock
}

// Loop samples every Interval until done says so or ctx ends; each
// sample (or its error: a failed listing is tried again next time) goes to
// report.
func (m *Monitor) Loop(ctx context.Context, done func() bool, report func(Snapshot, []Holder, error)) error {
	every := m.Interval
	if every <= 0 {
		every = time.Second
	}
	clock := m.clock()
	next := clock.Now()
	for {
		s, held, err := m.Sample(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if report != nil {
			report(s, held, err)
		}
		if done != nil && done() {
			return nil
		}
		next = next.Add(every)
		if err := clock.Sleep(ctx, next.Sub(clock.Now())); err != nil {
			return err
		}
	}
}

// NodeMap writes holders as one character per node: B batch job, T a
// pilot whose node a trial holds, P a pilot without a trial, . free.
func NodeMap(held []Holder) string {
	b := make([]byte, len(held))
	for i, h := range held {
		b[i] = byte(h)
	}
	return string(b)
}

// ProgressLine is one line of live progress:
//
//	2:05 BBTTP. | batch 41/250 done, 3 running, 2 waiting | pilots 3 running, 1 waiting, 7 preempted | trials 9 done | about 27 min left
//
// trialsDone < 0 leaves the trials out (the baseline pass); left < 0 the
// time left (the run's, Estimate.Left).
func ProgressLine(elapsed time.Duration, held []Holder, c Counts, planned, trialsDone int, left time.Duration) string {
	var b strings.Builder
	sec := int(elapsed.Round(time.Second) / time.Second)
	fmt.Fprintf(&b, "%3d:%02d %s | batch %d/%d done, %d running, %d waiting", sec/60, sec%60, NodeMap(held),
		c.BatchDone, planned, c.BatchRunning, c.BatchPending)
	if trialsDone >= 0 {
		fmt.Fprintf(&b, " | pilots %d running, %d waiting, %d preempted | trials %d done",
			c.PilotsRunning, c.PilotsPending, c.Preempted, trialsDone)
	}
	if left >= 0 {
		fmt.Fprintf(&b, " | about %s left", About(left))
	}
	return b.String()
}
