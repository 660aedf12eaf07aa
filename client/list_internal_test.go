package client

import (
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// `gleaner list --running` ages a campaign that continued as new from its
// first run, as `gleaner list` does: its closed runs are read too, and
// only campaigns whose latest run runs are kept.
func TestListRunningAgesFromTheFirstRun(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	runs := []*campaignRun{
		{id: "gleaner-campaign-a", run: "2", status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, started: t0.Add(time.Hour)},
		{id: "gleaner-campaign-a", run: "1", status: enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, started: t0, closed: t0.Add(time.Hour)},
		{id: "gleaner-campaign-b", run: "1", status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, started: t0, closed: t0.Add(time.Minute)},
	}
	c := New(nil, Options{UIBase: "-"})
	got := c.summaries(runs, true)
	if len(got) != 1 || got[0].Name != "a" || got[0].RunID != "2" || !got[0].Started.Equal(t0) {
		t.Fatalf("--running: %+v, want campaign a only, its latest run 2, started at its first run %v", got, t0)
	}
	if all := c.summaries(runs, false); len(all) != 2 {
		t.Fatalf("all campaigns: %d, want 2", len(all))
	}
}
