package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// TrialsNewest lists a campaign's trials, as Trials does, but only the
// newest limit of them by trial id (limit ≤ 0: all). It reads only what
// those need, so it answers quickly at any size: an inline campaign
// (spec trial.inline) keeps its ended trials in chunks of
// workflows.InlineRecordsChunk (TrialRecords workflows), read newest
// first, and its in-flight ones in the campaign (QueryTrials); a campaign
// with a workflow per trial queries only the newest limit workflows.
func (c *Client) TrialsNewest(ctx context.Context, name string, limit int) (TrialList, error) {
	spec, err := c.Spec(ctx, name)
	if err != nil {
		return TrialList{}, err
	}
	var l TrialList
	switch {
	case spec.Trial.Inline:
		l, err = c.inlineTrials(ctx, name, limit)
	case limit <= 0:
		l.Trials, err = c.Trials(ctx, name)
	default:
		l.Trials, err = c.newestTrialWorkflows(ctx, name, limit)
	}
	return l, err
}

// TrialList is TrialsNewest's answer.
type TrialList struct {
	Trials []workflows.TrialStatus
	// Busy: an inline campaign too busy to answer within QueryPatience;
	// Trials holds only its chunks (its in-flight trials and those ended
	// since its last chunk, at most workflows.InlineRecordsChunk, are
	// missing).
	Busy bool
}

// inlineTrials reads an inline campaign's trials: the campaign's own
// (in flight, and ended since its last chunk) and its chunks, newest
// first until limit are found.
func (c *Client) inlineTrials(ctx context.Context, name string, limit int) (TrialList, error) {
	var live []workflows.TrialStatus
	busy := false
	wfID := workflows.CampaignWorkflowID(name)
	// A busy campaign answers only between its workflow tasks: wait
	// QueryPatience, then list what its chunks hold (Busy says so).
	qctx, cancel := context.WithTimeout(ctx, QueryPatience)
	err := c.query(qctx, wfID, "campaign "+name, workflows.QueryTrials, &live)
	cancel()
	switch {
	case err == nil:
	case ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded):
		live, busy = nil, true
	default:
		return TrialList{}, err
	}
	chunks, err := c.listIDs(ctx, fmt.Sprintf("%s = %q AND %s = %q",
		workflows.GleanerCampaign.GetName(), name, workflows.GleanerKind.GetName(), workflows.KindRecords))
	if err != nil {
		return TrialList{}, fmt.Errorf("listing the trial records of campaign %q: %w", name, err)
	}
	slices.Sort(chunks) // …-records-00001, …-records-00002, …
	seen := map[string]bool{}
	var out []workflows.TrialStatus
	add := func(ts []workflows.TrialStatus) {
		// Newer first: a trial continued by its searcher ends again later.
		for i := len(ts) - 1; i >= 0; i-- {
			if !seen[ts[i].TrialID] {
				seen[ts[i].TrialID] = true
				out = append(out, ts[i])
			}
		}
	}
	add(live)
	// Read chunks newest first, a few at a time, until limit are found.
	const parallel = 8
	for end := len(chunks); end > 0 && (limit <= 0 || len(out) < limit); end -= parallel {
		batch := chunks[max(0, end-parallel):end]
		recs := make([]workflows.TrialRecords, len(batch))
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for i, id := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.tc.GetWorkflow(ctx, id, "").Get(ctx, &recs[i])
			}()
		}
		wg.Wait()
		for i := len(batch) - 1; i >= 0; i-- {
			if errs[i] != nil {
				return TrialList{}, fmt.Errorf("reading trial records %s: %w", batch[i], errs[i])
			}
			add(recs[i].Trials)
		}
	}
	slices.SortFunc(out, byTrialID)
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return TrialList{Trials: out, Busy: busy}, nil
}

// newestTrialWorkflows is Trials for the newest limit trial workflows.
func (c *Client) newestTrialWorkflows(ctx context.Context, name string, limit int) ([]workflows.TrialStatus, error) {
	ids, err := c.listIDs(ctx, fmt.Sprintf("%s = %q AND %s = %q AND %s = 'Running'",
		workflows.GleanerCampaign.GetName(), name, workflows.GleanerKind.GetName(), workflows.KindTrial, "ExecutionStatus"))
	if err != nil {
		return nil, fmt.Errorf("listing the trials of campaign %q: %w", name, err)
	}
	open := map[string]bool{}
	for _, id := range ids {
		open[id] = true
	}
	all, err := c.listIDs(ctx, fmt.Sprintf("%s = %q AND %s = %q",
		workflows.GleanerCampaign.GetName(), name, workflows.GleanerKind.GetName(), workflows.KindTrial))
	if err != nil {
		return nil, fmt.Errorf("listing the trials of campaign %q: %w", name, err)
	}
	all = latestSegments(all)
	slices.SortFunc(all, byNumber)
	if len(all) > limit {
		all = all[len(all)-limit:]
	}
	out := make([]workflows.TrialStatus, len(all))
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, id := range all {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := c.query(ctx, id, "trial "+id, workflows.QueryStatus, &out[i])
			if err != nil && !open[id] {
				out[i], err = c.trialFromResult(ctx, id)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, byTrialID)
	return out, nil
}

// listIDs lists the workflow ids a visibility query matches, each once.
func (c *Client) listIDs(ctx context.Context, q string) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	var token []byte
	for {
		resp, err := c.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetExecutions() {
			if id := e.GetExecution().GetWorkflowId(); !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return ids, nil
		}
	}
}

// byNumber orders ids that end in a number by that number ("t99999"
// before "t100000"), and others as strings.
func byNumber(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
}

func byTrialID(a, b workflows.TrialStatus) int { return byNumber(a.TrialID, b.TrialID) }
