package client

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/gleaner-hpc/gleaner"
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
	// On a loaded server every read takes a while: an inline campaign's
	// chunks are listed and its in-flight trials asked for while its spec
	// is read (a campaign with a workflow per trial answers the query
	// with nothing, and the answer is dropped).
	patience := time.NewTimer(QueryPatience)
	defer patience.Stop()
	lctx, cancel := context.WithCancel(ctx) // not needed past this call
	defer cancel()
	type listed struct {
		ids []string
		err error
	}
	chunks := make(chan listed, 1)
	go func() {
		ids, err := c.listIDs(lctx, fmt.Sprintf("%s = %q AND %s = %q",
			workflows.GleanerCampaign.GetName(), name, workflows.GleanerKind.GetName(), workflows.KindRecords))
		chunks <- listed{ids, err}
	}()
	var live liveTrials
	if QueryPatience > 0 {
		live.answer = make(chan error, 1)
		go func() {
			live.answer <- c.query(lctx, workflows.CampaignWorkflowID(name), "campaign "+name, workflows.QueryTrials, &live.trials)
		}()
	}
	spec, err := c.Spec(ctx, name)
	if err != nil {
		return TrialList{}, err
	}
	var l TrialList
	switch {
	case spec.Trial.Inline:
		ch := <-chunks
		if ch.err != nil {
			return TrialList{}, fmt.Errorf("listing the trial records of campaign %q: %w", name, ch.err)
		}
		l, err = c.inlineTrials(ctx, limit, ch.ids, live, patience.C, cancel)
	case limit <= 0:
		l.Trials, err = c.Trials(ctx, name)
	default:
		l.Trials, err = c.newestTrialWorkflows(ctx, name, limit)
	}
	l.Spec = spec
	return l, err
}

// liveTrials is an inline campaign's answer to QueryTrials: its in-flight
// trials and those ended since its last chunk; answer is nil when the
// campaign was not asked.
type liveTrials struct {
	trials []workflows.TrialStatus
	answer chan error
}

// TrialList is TrialsNewest's answer.
type TrialList struct {
	Trials []workflows.TrialStatus
	// Busy: an inline campaign too busy to answer within QueryPatience;
	// Trials holds only its chunks (its in-flight trials and those ended
	// since its last chunk, at most workflows.InlineRecordsChunk, are
	// missing).
	Busy bool
	// Spec is the campaign's spec, read to tell how it keeps its trials
	// (its objective names the metric the trials are scored by).
	Spec gleaner.CampaignSpec
}

// inlineTrials reads an inline campaign's trials: the campaign's own
// (live: in flight, and ended since its last chunk) and its chunks (the
// workflow ids of its TrialRecords), newest first until limit are found.
// A busy campaign answers only between its workflow tasks: once patience
// fires and the chunks are read, it lists what they hold (Busy says so;
// at once when the campaign was not asked); cancel stops the query.
func (c *Client) inlineTrials(ctx context.Context, limit int, chunks []string, live liveTrials, patience <-chan time.Time, cancel func()) (TrialList, error) {
	slices.Sort(chunks) // …-records-00001, …-records-00002, …
	// Read chunks newest first, a few at a time, until limit are found.
	var recs []workflows.TrialRecords // newest first
	counted := map[string]bool{}      // a trial continued by its searcher is in several chunks
	// A chunk holds up to workflows.InlineRecordsChunk trials: read as
	// many at once as the limit still needs, at most 8.
	const parallel = 8
	for end, found := len(chunks), 0; end > 0 && (limit <= 0 || found < limit); {
		n := parallel
		if limit > 0 {
			n = min(n, (limit-found+workflows.InlineRecordsChunk-1)/workflows.InlineRecordsChunk)
		}
		batch := chunks[max(0, end-n):end]
		end -= len(batch)
		got := make([]workflows.TrialRecords, len(batch))
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for i, id := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.tc.GetWorkflow(ctx, id, "").Get(ctx, &got[i])
			}()
		}
		wg.Wait()
		for i := len(batch) - 1; i >= 0; i-- {
			if errs[i] != nil {
				return TrialList{}, fmt.Errorf("reading trial records %s: %w", batch[i], errs[i])
			}
			recs = append(recs, got[i])
			for _, t := range got[i].Trials {
				if !counted[t.TrialID] {
					counted[t.TrialID] = true
					found++
				}
			}
		}
	}
	busy := live.answer == nil
	var err error
	if !busy {
		select {
		case err = <-live.answer:
		case <-patience:
			select {
			case err = <-live.answer:
			default:
				cancel()
				<-live.answer // live.trials is written by one goroutine only
				busy, err = true, nil
			}
		}
	}
	if busy {
		live.trials = nil
	}
	if err != nil {
		return TrialList{}, err
	}
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
	add(live.trials)
	for _, r := range recs {
		add(r.Trials)
	}
	slices.SortFunc(out, byTrialID)
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return TrialList{Trials: out, Busy: busy}, nil
}

// newestTrialWorkflows is Trials for the newest limit trial workflows.
func (c *Client) newestTrialWorkflows(ctx context.Context, name string, limit int) ([]workflows.TrialStatus, error) {
	all, open, err := c.listWorkflows(ctx, fmt.Sprintf("%s = %q AND %s = %q",
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
	ids, _, err := c.listWorkflows(ctx, q)
	return ids, err
}

// listWorkflows lists the workflow ids a visibility query matches, each
// once (a workflow that continued as new is listed once per run), and
// which of them have a running run.
func (c *Client) listWorkflows(ctx context.Context, q string) (ids []string, open map[string]bool, err error) {
	open = map[string]bool{}
	var token []byte
	for {
		resp, err := c.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token})
		if err != nil {
			return nil, nil, err
		}
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			if _, seen := open[id]; !seen {
				ids = append(ids, id)
			}
			open[id] = open[id] || e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return ids, open, nil
		}
	}
}

// byNumber orders ids that end in a number by that number ("t99999"
// before "t100000"), and others as strings.
func byNumber(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
}

func byTrialID(a, b workflows.TrialStatus) int { return byNumber(a.TrialID, b.TrialID) }
