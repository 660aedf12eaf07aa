package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/gleaner-hpc/gleaner"
)

// TrialFollower reads a campaign's trials again and again, as a page
// that shows them live does, at a cost that does not grow with the
// campaign's size: what cannot change any more is read once. An inline
// campaign's records chunks never change, nor does a trial workflow once
// closed; each Read asks the server for the list of chunks (or trial
// workflows), the campaign's status and its in-flight trials, and reads
// only the chunks and closed trials it has not read before.
//
// A TrialFollower is safe for one Read at a time.
type TrialFollower struct {
	c    *Client
	name string
	spec *gleaner.CampaignSpec
	// chunks are an inline campaign's records, by workflow id.
	chunks map[string][]gleaner.TrialStatus
	// closed are the trials whose workflow has closed, by workflow id.
	closed map[string]gleaner.TrialStatus
	// final is the list read once the campaign's workflow had closed:
	// nothing changes any more.
	final *TrialList
}

// FollowTrials returns a TrialFollower of campaign name.
func (c *Client) FollowTrials(name string) *TrialFollower {
	return &TrialFollower{c: c, name: name, chunks: map[string][]gleaner.TrialStatus{}, closed: map[string]gleaner.TrialStatus{}}
}

// FollowStats are the server calls one Read made.
type FollowStats struct {
	// Lists are visibility list calls (pages), Queries workflow queries,
	// Results reads of closed workflows' results, Probes reads of an
	// inline campaign's next records chunk by its number (visibility
	// lags behind a new one; the last probe finds none).
	Lists, Queries, Results, Probes int
}

// Calls is every call the Read made.
func (s FollowStats) Calls() int { return s.Lists + s.Queries + s.Results + s.Probes }

// Read is every trial of the campaign, by trial id, each in the state its
// campaign classifies it (as TrialsView), with the campaign's status and
// spec, and the calls it took. Once a read found the campaign's workflow
// closed, later reads answer what it read and call nothing.
func (f *TrialFollower) Read(ctx context.Context) (TrialList, FollowStats, error) {
	var st FollowStats
	if f.spec == nil {
		spec, err := f.c.Spec(ctx, f.name)
		if err != nil {
			return TrialList{}, st, err
		}
		f.spec = &spec
		st.Results++
	}
	if f.final != nil {
		return *f.final, st, nil
	}
	status, err := f.c.Status(ctx, f.name)
	st.Queries++
	if err != nil {
		return TrialList{}, st, err
	}
	// An ended campaign's workflow that has closed changes no more: this
	// read is the last that asks the server anything (a query of a
	// closed workflow replays its history on a worker).
	closed := false
	switch status.State {
	case gleaner.CampaignCompleted, gleaner.CampaignStopped, gleaner.CampaignFailed:
		d, err := f.c.describe(ctx, f.name)
		st.Queries++
		closed = err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}
	var trials []gleaner.TrialStatus
	if f.spec.Trial.Inline {
		trials, err = f.readInline(ctx, &st)
	} else {
		trials, err = f.readWorkflows(ctx, status, &st)
	}
	if err != nil {
		return TrialList{}, st, err
	}
	slices.SortFunc(trials, byTrialID)
	ClassifyTrials(trials, status)
	l := TrialList{Trials: trials, Spec: *f.spec, Status: &status}
	if closed {
		f.final = &l
	}
	return l, st, nil
}

func (f *TrialFollower) readInline(ctx context.Context, st *FollowStats) ([]gleaner.TrialStatus, error) {
	// The campaign is asked first: a chunk it flushes after answering
	// holds trials its answer has, and one flushed before is listed, or,
	// while visibility lags, found by its number (chunks are numbered
	// 1, 2, … in order) below.
	var live []gleaner.TrialStatus
	err := f.c.query(ctx, gleaner.CampaignWorkflowID(f.name), "campaign "+f.name, gleaner.QueryTrials, &live)
	st.Queries++
	if err != nil {
		return nil, err
	}
	ids, err := f.c.listIDs(ctx, fmt.Sprintf("%s = %q AND %s = %q",
		gleaner.SearchAttrCampaign, f.name, gleaner.SearchAttrKind, gleaner.WorkflowKindRecords))
	st.Lists++
	if err != nil {
		return nil, fmt.Errorf("listing the trial records of campaign %q: %w", f.name, err)
	}
	listed := map[string]bool{}
	for _, id := range ids {
		listed[id] = true
	}
	for id := range f.chunks {
		if !listed[id] {
			ids, listed[id] = append(ids, id), true
		}
	}
	// Chunks not listed yet, by number after the highest known.
	wfID := gleaner.CampaignWorkflowID(f.name)
	next := 1
	for _, id := range ids {
		if n, err := strconv.Atoi(strings.TrimPrefix(id, wfID+"-records-")); err == nil {
			next = max(next, n+1)
		}
	}
	for ; ; next++ {
		id := gleaner.TrialRecordsWorkflowID(wfID, next)
		var r gleaner.TrialRecords
		err := f.c.tc.GetWorkflow(ctx, id, "").Get(ctx, &r)
		st.Probes++
		if err != nil {
			break // not there (yet): a later read finds it
		}
		f.chunks[id] = r.Trials
		ids = append(ids, id)
	}
	var missing []string
	for _, id := range ids {
		if _, ok := f.chunks[id]; !ok {
			missing = append(missing, id)
		}
	}
	got, err := readAll(ctx, missing, func(ctx context.Context, id string) ([]gleaner.TrialStatus, error) {
		var r gleaner.TrialRecords
		if err := f.c.tc.GetWorkflow(ctx, id, "").Get(ctx, &r); err != nil {
			return nil, fmt.Errorf("reading trial records %s: %w", id, err)
		}
		return r.Trials, nil
	})
	st.Results += len(missing)
	if err != nil {
		return nil, err
	}
	for i, id := range missing {
		f.chunks[id] = got[i]
	}
	// A trial continued by its searcher ends again later: the campaign's
	// answer, then the newest chunk, wins.
	slices.Sort(ids)
	seen := map[string]bool{}
	var out []gleaner.TrialStatus
	add := func(ts []gleaner.TrialStatus) {
		for i := len(ts) - 1; i >= 0; i-- {
			if !seen[ts[i].TrialID] {
				seen[ts[i].TrialID] = true
				out = append(out, ts[i])
			}
		}
	}
	add(live)
	for i := len(ids) - 1; i >= 0; i-- {
		add(f.chunks[ids[i]])
	}
	return out, nil
}

func (f *TrialFollower) readWorkflows(ctx context.Context, status gleaner.CampaignStatus, st *FollowStats) ([]gleaner.TrialStatus, error) {
	all, open, err := f.c.listWorkflows(ctx, fmt.Sprintf("%s = %q AND %s = %q",
		gleaner.SearchAttrCampaign, f.name, gleaner.SearchAttrKind, gleaner.WorkflowKindTrial))
	st.Lists++
	if err != nil {
		return nil, fmt.Errorf("listing the trials of campaign %q: %w", f.name, err)
	}
	all = latestSegments(all)
	// In-flight trials the server's search does not list yet; one the
	// campaign is still starting is not found yet, and shows as its
	// campaign says.
	listed := map[string]bool{}
	for _, id := range all {
		listed[id] = true
	}
	unlisted := map[string]gleaner.TrialBrief{}
	for _, b := range status.Trials {
		if b.WorkflowID != "" && !listed[b.WorkflowID] {
			all = append(all, b.WorkflowID)
			open[b.WorkflowID] = true
			unlisted[b.WorkflowID] = b
		}
	}
	var ask []string
	for _, id := range all {
		if _, ok := f.closed[id]; !ok {
			ask = append(ask, id)
		}
	}
	got, err := readAll(ctx, ask, func(ctx context.Context, id string) (gleaner.TrialStatus, error) {
		t, err := f.c.trialStatus(ctx, id, open[id])
		if b, ok := unlisted[id]; ok && errors.Is(err, ErrNotFound) {
			return gleaner.TrialStatus{TrialID: b.TrialID, Stage: b.Stage, TrialProgress: gleaner.TrialProgress{State: b.State}}, nil
		}
		return t, err
	})
	st.Queries += len(ask)
	if err != nil {
		return nil, err
	}
	for i, id := range ask {
		if !open[id] {
			f.closed[id] = got[i]
		}
	}
	out := make([]gleaner.TrialStatus, 0, len(all))
	for i, id := range ask {
		if open[id] {
			out = append(out, got[i])
		}
	}
	for _, id := range all {
		if t, ok := f.closed[id]; ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// readAll reads every id, 8 at a time, in order; the first error wins.
func readAll[T any](ctx context.Context, ids []string, read func(context.Context, string) (T, error)) ([]T, error) {
	out := make([]T, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = read(ctx, id)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
