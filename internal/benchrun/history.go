package benchrun

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// HistoryLimit is the Temporal server's default hard limit on the events
// of one workflow run (limit.historyCount.error); it warns at 10,240.
const HistoryLimit = 51_200

// RunInfo is one run of a workflow execution.
type RunInfo struct {
	WorkflowID    string `json:"workflow_id"`
	RunID         string `json:"run_id"`
	Status        string `json:"status"`
	HistoryLength int64  `json:"history_length"`
}

// runChain returns every run of workflow id, oldest first, by following
// the continue-as-new chain from the first run (exact: no visibility).
func runChain(ctx context.Context, c client.Client, id string) ([]RunInfo, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, fmt.Errorf("describing %s: %w", id, err)
	}
	run := d.GetWorkflowExecutionInfo().GetFirstRunId()
	if run == "" {
		run = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	}
	var out []RunInfo
	for run != "" && len(out) < 10_000 {
		d, err := c.DescribeWorkflowExecution(ctx, id, run)
		if err != nil {
			return nil, fmt.Errorf("describing %s run %s: %w", id, run, err)
		}
		info := d.GetWorkflowExecutionInfo()
		out = append(out, RunInfo{WorkflowID: id, RunID: run, Status: statusName(info.GetStatus()), HistoryLength: info.GetHistoryLength()})
		if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
			break
		}
		it := c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
		run = ""
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return nil, fmt.Errorf("close event of %s run %s: %w", id, out[len(out)-1].RunID, err)
			}
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				run = a.GetNewExecutionRunId()
			}
		}
	}
	return out, nil
}

func statusName(s enumspb.WorkflowExecutionStatus) string {
	switch s {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return "running"
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "completed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return "failed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "canceled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return "terminated"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "continued-as-new"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed-out"
	}
	return s.String()
}

// history returns every event of one run.
func history(ctx context.Context, c client.Client, id, run string) ([]*historypb.HistoryEvent, error) {
	it := c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var evs []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// eventTypeCounts counts events by type (short names, e.g.
// "WorkflowTaskCompleted"), for the report's breakdown.
func eventTypeCounts(evs []*historypb.HistoryEvent) map[string]int {
	out := map[string]int{}
	for _, ev := range evs {
		out[ev.GetEventType().String()]++
	}
	return out
}

// Stats summarises a sample: stats.Summary, with nearest-rank p50 and p95.
type Stats = stats.Summary

func summarize(xs []float64) Stats { return stats.Summarize(xs) }
