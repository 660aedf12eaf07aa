package client

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/gleaner-hpc/gleaner"
)

// CampaignSummary is one campaign as the server's visibility store lists
// it: what its search attributes said when it last published them (a
// running campaign publishes a change within a workflow task; an inline
// one at most every gleaner.InlineCountsEvery), with the budget and
// objective of its spec. Status asks the campaign itself.
type CampaignSummary struct {
	Name       string `json:"name"`
	WorkflowID string `json:"workflow_id"`
	// RunID is the campaign's latest run (it continues as new).
	RunID string `json:"run_id"`
	// State is the campaign's phase (GleanerStatus); for a workflow that
	// ended without Gleaner saying how (terminated, timed out, canceled,
	// or failed without a campaign result) it is that workflow status:
	// "terminated", "timed_out", "canceled" or "failed".
	State gleaner.CampaignPhase `json:"state"`
	// TrialsDone counts trials ended (completed, stopped or failed), of
	// MaxTrials; TrialsRunning those in flight (started and not ended:
	// running, or waiting for nodes).
	TrialsDone    int `json:"trials_done"`
	TrialsRunning int `json:"trials_running"`
	MaxTrials     int `json:"max_trials,omitempty"`
	// Objective and Mode are the spec's objective metric and "min" or
	// "max"; Best its best value so far, nil before a trial reported it.
	Objective string   `json:"objective,omitempty"`
	Mode      string   `json:"mode,omitempty"`
	Best      *float64 `json:"best,omitempty"`
	// Objectives counts a campaign's objectives when it has several or
	// constraints (0 otherwise); its best is then its Pareto front, whose
	// Hypervolume (GleanerHypervolume) is nil until a trial is on it, and
	// Objective is the first objective.
	Objectives  int      `json:"objectives,omitempty"`
	Hypervolume *float64 `json:"hypervolume,omitempty"`
	// Started is when the campaign started (its first run); Closed when
	// its workflow ended, zero while it runs.
	Started time.Time `json:"started"`
	Closed  time.Time `json:"closed,omitzero"`
	// UIURL opens the campaign in the Temporal web UI ("" without one).
	UIURL string `json:"ui_url,omitempty"`
}

// Progress is TrialsDone of MaxTrials, in [0, 1] (0 when MaxTrials is
// unknown).
func (s CampaignSummary) Progress() float64 {
	if s.MaxTrials <= 0 {
		return 0
	}
	return min(1, float64(s.TrialsDone)/float64(s.MaxTrials))
}

// Ended reports whether the campaign's workflow has ended.
func (s CampaignSummary) Ended() bool { return !s.Closed.IsZero() }

// ListOptions narrow List. The zero value lists every campaign.
type ListOptions struct {
	// Limit keeps the newest Limit campaigns by start time (≤ 0: all).
	Limit int
	// Running keeps only the campaigns whose workflow runs (running,
	// paused or stopping).
	Running bool
}

// List is the namespace's campaigns, newest first, from the visibility
// store (the GleanerKind = "campaign" search attribute; see
// gleaner.SearchAttributes, which `gleaner setup` registers): one
// visibility query for all of them, and the first history event of each
// one listed for its spec's budget and objective. A campaign just
// submitted may take a moment to be listed.
func (c *Client) List(ctx context.Context, opts ListOptions) ([]CampaignSummary, error) {
	// Every run, also with Running: a campaign that continued as new
	// started with its first run (CampaignSummary.Started).
	q := fmt.Sprintf("%s = %q", gleaner.SearchAttrKind, gleaner.WorkflowKindCampaign)
	var runs []*campaignRun
	var token []byte
	for {
		resp, err := c.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: c.opts.Namespace, Query: q, NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("listing campaigns (%s): %w", q, err)
		}
		for _, e := range resp.GetExecutions() {
			r := &campaignRun{
				id: e.GetExecution().GetWorkflowId(), run: e.GetExecution().GetRunId(), status: e.GetStatus(),
				started: e.GetStartTime().AsTime(), attrs: e.GetSearchAttributes().GetIndexedFields(),
			}
			if ct := e.GetCloseTime(); ct != nil && e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				r.closed = ct.AsTime()
			}
			runs = append(runs, r)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	out := c.summaries(runs, opts.Running)
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	c.addSpecs(ctx, out)
	return out, nil
}

// campaignRun is one run of a campaign's workflow as visibility lists it.
type campaignRun struct {
	id, run string
	status  enumspb.WorkflowExecutionStatus
	started time.Time
	closed  time.Time // zero while it runs
	attrs   map[string]*commonpb.Payload
}

// summaries folds runs into one summary per campaign, newest first: a
// campaign that continued as new is listed once per run, and its latest
// run says where it is. running keeps only the campaigns whose latest run
// runs.
func (c *Client) summaries(runs []*campaignRun, running bool) []CampaignSummary {
	byID := map[string][]*campaignRun{}
	var ids []string
	for _, r := range runs {
		if _, seen := byID[r.id]; !seen {
			ids = append(ids, r.id)
		}
		byID[r.id] = append(byID[r.id], r)
	}
	out := make([]CampaignSummary, 0, len(ids))
	for _, id := range ids {
		rs := byID[id]
		first := slices.MinFunc(rs, func(a, b *campaignRun) int { return a.started.Compare(b.started) })
		latest := slices.MaxFunc(rs, func(a, b *campaignRun) int { return a.started.Compare(b.started) })
		if running && latest.status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			continue
		}
		s := CampaignSummary{
			Name:       keyword(latest.attrs, gleaner.SearchAttrCampaign),
			WorkflowID: id,
			RunID:      latest.run,
			State:      gleaner.CampaignPhase(keyword(latest.attrs, gleaner.SearchAttrStatus)),
			Started:    first.started,
			UIURL:      c.WorkflowURL(id),
		}
		if s.Name == "" {
			s.Name = strings.TrimPrefix(id, gleaner.CampaignWorkflowID(""))
		}
		var n int64
		if decodeAttr(latest.attrs, gleaner.SearchAttrTrialsDone, &n) {
			s.TrialsDone = int(n)
		}
		if decodeAttr(latest.attrs, gleaner.SearchAttrTrialsRunning, &n) {
			s.TrialsRunning = int(n)
		}
		var best, hv float64
		if decodeAttr(latest.attrs, gleaner.SearchAttrBestScore, &best) {
			s.Best = &best
		}
		if decodeAttr(latest.attrs, gleaner.SearchAttrHypervolume, &hv) {
			s.Hypervolume = &hv
		}
		s.Closed = latest.closed
		s.State = summaryState(s.State, latest.status)
		if s.Ended() {
			s.TrialsRunning = 0 // its last publish may predate the end
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b CampaignSummary) int {
		return cmp.Or(b.Started.Compare(a.Started), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// summaryState is the campaign's phase as it published it, unless its
// workflow says otherwise: a workflow ended from outside (terminated,
// timed out, canceled) or failed without publishing its end.
func summaryState(published gleaner.CampaignPhase, status enumspb.WorkflowExecutionStatus) gleaner.CampaignPhase {
	switch status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return "terminated"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed_out"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "canceled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		if published != gleaner.CampaignFailed {
			return gleaner.CampaignFailed
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		if published == "" { // its first workflow task is yet to publish
			return gleaner.CampaignRunning
		}
	}
	return published
}

// keyword decodes a Keyword search attribute, "" when absent.
func keyword(attrs map[string]*commonpb.Payload, name string) string {
	var s string
	decodeAttr(attrs, name, &s)
	return s
}

// decodeAttr decodes search attribute name into out; false when absent or
// unreadable. Search attributes are plain JSON, never encrypted.
func decodeAttr(attrs map[string]*commonpb.Payload, name string, out any) bool {
	p := attrs[name]
	return p != nil && converter.GetDefaultDataConverter().FromPayload(p, out) == nil
}

// addSpecs reads each campaign's spec (its start input: one history
// event) for its budget and objective, a few at a time; a spec that
// cannot be read leaves those fields empty.
func (c *Client) addSpecs(ctx context.Context, out []CampaignSummary) {
	const parallel = 8
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var in gleaner.CampaignInput
			if c.startInput(ctx, out[i].WorkflowID, &in) != nil {
				return
			}
			spec := in.Spec.WithDefaults()
			out[i].MaxTrials = spec.Budget.MaxTrials
			o := spec.PrimaryObjective()
			out[i].Objective, out[i].Mode = o.Metric, o.Mode
			if spec.MultiObjective() {
				out[i].Objectives = len(spec.ObjectiveList())
			}
		}()
	}
	wg.Wait()
}
