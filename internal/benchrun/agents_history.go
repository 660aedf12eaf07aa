package benchrun

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// allocationsAfter returns the first allocation over n nodes and the
// first allocation at all recorded after the last signal of sp.
func allocationsAfter(runs [][]*historypb.HistoryEvent, sp signalSpan, n int) (full, first *workflows.SolveSummary) {
	dc := converter.GetDefaultDataConverter()
	for r := sp.lastRun; r < len(runs); r++ {
		for i, ev := range runs[r] {
			a := ev.GetMarkerRecordedEventAttributes()
			if a == nil || (r == sp.lastRun && i < sp.lastIndex) {
				continue
			}
			var res workflows.AllocateResult
			if dc.FromPayloads(a.GetDetails()["result"], &res) != nil || res.Summary.Formulation == "" {
				continue // not an allocation (PollNodes)
			}
			if first == nil {
				first = &res.Summary
			}
			if res.Summary.Nodes == n {
				return &res.Summary, first
			}
		}
	}
	return nil, first
}

type runSize struct {
	RunInfo
	bytes int64
}

func (b *agentsBench) runSizes(ctx context.Context) ([]runSize, error) {
	runs, err := runChain(ctx, b.c, b.poolID)
	if err != nil {
		return nil, err
	}
	out := make([]runSize, len(runs))
	for i, r := range runs {
		d, err := b.c.DescribeWorkflowExecution(ctx, r.WorkflowID, r.RunID)
		if err != nil {
			return nil, fmt.Errorf("describing %s run %s: %w", r.WorkflowID, r.RunID, err)
		}
		info := d.GetWorkflowExecutionInfo()
		out[i] = runSize{RunInfo: r, bytes: info.GetHistorySizeBytes()}
		out[i].HistoryLength = info.GetHistoryLength()
	}
	return out, nil
}

func totals(rs []runSize) (events, bytes int64) {
	for _, r := range rs {
		events += r.HistoryLength
		bytes += r.bytes
	}
	return events, bytes
}

// probePool times a DescribeWorkflowExecution of the pool every 250 ms
// until stopped; stop returns the latencies in milliseconds.
func probePool(ctx context.Context, c client.Client, id string) (stop func() []float64) {
	ctx, cancel := context.WithCancel(ctx)
	var out []float64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			t0 := time.Now()
			_, err := c.DescribeWorkflowExecution(ctx, id, "")
			if err == nil {
				out = append(out, ms(t0, time.Now()))
			}
			select {
			case <-ctx.Done():
			case <-time.After(agentsPollInterval):
			}
		}
	}()
	var once sync.Once
	return func() []float64 {
		once.Do(func() { cancel(); <-done })
		return out
	}
}

func ms(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }

// waitEvery calls cond every interval until it is true or timeout; an
// error of cond is reported with the timeout, or at once if it is a
// fatalError.
func waitEvery(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
			var fatal fatalError
			if errors.As(err, &fatal) {
				return fatal.error
			}
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// signalSpan is what a workflow's history says of the signals of one
// name received since a time: how many, the first and the last, when the
// workflow task that took the last one completed (zero: not yet), and
// how many workflow tasks completed from the first to that one.
type signalSpan struct {
	Count       int
	First, Last time.Time
	Handled     time.Time
	Tasks       int
	// lastRun and lastIndex place the last signal in the runs.
	lastRun, lastIndex int
}

// analyzeSignals reads the histories of consecutive runs (a signal left
// at the end of a run is taken by its last workflow task, which
// continues it as new).
func analyzeSignals(runs [][]*historypb.HistoryEvent, name string, since time.Time) signalSpan {
	var sp signalSpan
	waiting, startedAfter := false, false
	tasks := 0
	for r, evs := range runs {
		startedAfter = false
		for i, ev := range evs {
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
				if ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() != name || at.Before(since) {
					continue
				}
				sp.Count++
				if sp.First.IsZero() {
					sp.First = at
				}
				sp.Last, sp.Handled, sp.lastRun, sp.lastIndex = at, time.Time{}, r, i
				waiting, startedAfter = true, false
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				startedAfter = waiting
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				startedAfter = false
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if sp.Count > 0 {
					tasks++
				}
				if startedAfter {
					sp.Handled, sp.Tasks = at, tasks
					waiting, startedAfter = false, false
				}
			}
		}
	}
	return sp
}
