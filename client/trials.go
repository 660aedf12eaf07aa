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
)

// trialSelect says which of a campaign's trials listTrials reads.
type trialSelect struct {
	// limit: the newest limit trials by trial id (≤ 0: all).
	limit int
	// failed: only failed trials (the newest limit of those).
	failed bool
	// patient: wait for a busy inline campaign's answer as long as ctx
	// allows; otherwise QueryPatience, then its chunks alone (Busy).
	patient bool
}

// listTrials is the one way the client reads a campaign's trials, for
// either way a campaign runs them. An inline campaign (spec trial.inline)
// keeps its ended trials in chunks of gleaner.InlineRecordsChunk
// (TrialRecords workflows), read newest first, and its in-flight ones in
// the campaign (QueryTrials); a campaign with a workflow per trial is
// asked for its trial workflows (visibility: GleanerCampaign and
// GleanerKind), each queried, or, for an ended trial whose query fails,
// read from its result (which lacks nodes, step and checkpoint).
// Visibility lags a moment behind new trials. Trials come sorted by id.
func (c *Client) listTrials(ctx context.Context, name string, sel trialSelect) (TrialList, error) {
	if err := checkName("campaign", name); err != nil {
		return TrialList{}, err
	}
	// On a loaded server every read takes a while: an inline campaign's
	// chunks are listed and its in-flight trials asked for while its spec
	// is read (a campaign with a workflow per trial answers the query
	// with nothing, and the answer is dropped).
	var patience <-chan time.Time // nil: patient
	if !sel.patient {
		t := time.NewTimer(QueryPatience)
		defer t.Stop()
		patience = t.C
	}
	lctx, cancel := context.WithCancel(ctx) // not needed past this call
	defer cancel()
	type listed struct {
		ids []string
		err error
	}
	chunks := make(chan listed, 1)
	go func() {
		ids, err := c.listIDs(lctx, fmt.Sprintf("%s = %q AND %s = %q",
			gleaner.SearchAttrCampaign, name, gleaner.SearchAttrKind, gleaner.WorkflowKindRecords))
		chunks <- listed{ids, err}
	}()
	var live liveTrials
	ask := func() {
		live.answer = make(chan error, 1)
		go func() {
			live.answer <- c.query(lctx, gleaner.CampaignWorkflowID(name), "campaign "+name, gleaner.QueryTrials, &live.trials)
		}()
	}
	if sel.patient || QueryPatience > 0 {
		ask()
	}
	spec, err := c.Spec(ctx, name)
	if err != nil {
		return TrialList{}, err
	}
	var l TrialList
	if spec.Trial.Inline {
		ch := <-chunks
		if ch.err != nil {
			return TrialList{}, fmt.Errorf("listing the trial records of campaign %q: %w", name, ch.err)
		}
		if len(ch.ids) == 0 {
			// Before its first records chunk every trial is in the
			// campaign's answer alone: wait for it, however busy.
			patience = nil
			if live.answer == nil {
				ask()
			}
		}
		limit := sel.limit
		if sel.failed {
			limit = 0 // failed trials can be in any chunk
		}
		l, err = c.inlineTrials(ctx, limit, ch.ids, &live, patience, cancel)
		if sel.failed {
			l.Trials = slices.DeleteFunc(l.Trials, func(t gleaner.TrialStatus) bool { return t.State != gleaner.TrialFailed })
			if sel.limit > 0 && len(l.Trials) > sel.limit {
				l.Trials = l.Trials[len(l.Trials)-sel.limit:]
			}
		}
	} else {
		l.Trials, err = c.trialWorkflows(ctx, name, sel)
	}
	l.Spec = spec
	return l, err
}

// TrialsNewest lists a campaign's trials, as Trials does, but only the
// newest limit of them by trial id (limit ≤ 0: all), and it waits for a
// busy inline campaign at most QueryPatience (TrialList.Busy). It reads
// only what those need, so it answers quickly at any size.
func (c *Client) TrialsNewest(ctx context.Context, name string, limit int) (TrialList, error) {
	return c.listTrials(ctx, name, trialSelect{limit: limit})
}

// liveTrials is an inline campaign's answer to QueryTrials: its in-flight
// trials and those ended since its last chunk; answer is nil when the
// campaign was not asked.
type liveTrials struct {
	trials []gleaner.TrialStatus
	answer chan error
}

// TrialList is TrialsNewest's answer.
type TrialList struct {
	Trials []gleaner.TrialStatus
	// Busy: an inline campaign too busy to answer within QueryPatience;
	// Trials holds only its chunks (its in-flight trials and those ended
	// since its last chunk, at most gleaner.InlineRecordsChunk, are
	// missing).
	Busy bool
	// Spec is the campaign's spec, read to tell how it keeps its trials
	// (its objective names the metric the trials are scored by).
	Spec gleaner.CampaignSpec
	// Status is the campaign's status read with the list (TrialsView;
	// nil when it did not answer): the trials' states agree with it.
	Status *gleaner.CampaignStatus
}

// inlineTrials reads an inline campaign's trials: the campaign's own
// (live: in flight, and ended since its last chunk) and its chunks (the
// workflow ids of its TrialRecords), newest first until limit are found.
// A busy campaign answers only between its workflow tasks: once patience
// fires and the chunks are read, it lists what they hold (Busy says so;
// at once when the campaign was not asked); cancel stops the query.
func (c *Client) inlineTrials(ctx context.Context, limit int, chunks []string, live *liveTrials, patience <-chan time.Time, cancel func()) (TrialList, error) {
	slices.Sort(chunks) // …-records-00001, …-records-00002, …
	// Read chunks newest first, a few at a time, until limit are found.
	var recs []gleaner.TrialRecords // newest first
	counted := map[string]bool{}    // a trial continued by its searcher is in several chunks
	// A chunk holds up to gleaner.InlineRecordsChunk trials: read as
	// many at once as the limit still needs, at most 8.
	const parallel = 8
	for end, found := len(chunks), 0; end > 0 && (limit <= 0 || found < limit); {
		n := parallel
		if limit > 0 {
			n = min(n, (limit-found+gleaner.InlineRecordsChunk-1)/gleaner.InlineRecordsChunk)
		}
		batch := chunks[max(0, end-n):end]
		end -= len(batch)
		got := make([]gleaner.TrialRecords, len(batch))
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
	var out []gleaner.TrialStatus
	add := func(ts []gleaner.TrialStatus) {
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

// trialWorkflows reads the trials of a campaign with a workflow per
// trial: the newest sel.limit (≤ 0: all), of the failed ones if
// sel.failed (read from their results), a few at a time.
func (c *Client) trialWorkflows(ctx context.Context, name string, sel trialSelect) ([]gleaner.TrialStatus, error) {
	q := fmt.Sprintf("%s = %q AND %s = %q", gleaner.SearchAttrCampaign, name, gleaner.SearchAttrKind, gleaner.WorkflowKindTrial)
	if sel.failed {
		q += fmt.Sprintf(` AND (%s = %q OR ExecutionStatus = "Failed")`, gleaner.SearchAttrStatus, gleaner.TrialFailed)
	}
	// A trial that continued as new is listed once per run: keep its
	// workflow id once, open if any run is.
	all, open, err := c.listWorkflows(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("listing the trials of campaign %q: %w", name, err)
	}
	all = latestSegments(all)
	slices.SortFunc(all, byNumber)
	if sel.limit > 0 && len(all) > sel.limit {
		all = all[len(all)-sel.limit:]
	}
	out, err := readAll(ctx, all, func(ctx context.Context, id string) (gleaner.TrialStatus, error) {
		if sel.failed {
			return c.trialFromResult(ctx, id)
		}
		return c.trialStatus(ctx, id, open[id])
	})
	if err != nil {
		return nil, err
	}
	if sel.failed {
		out = slices.DeleteFunc(out, func(t gleaner.TrialStatus) bool { return t.State != gleaner.TrialFailed })
	}
	slices.SortFunc(out, byTrialID)
	return out, nil
}

// trialStatus asks a trial workflow for its status; a closed one that
// does not answer (no worker) is read from its result.
func (c *Client) trialStatus(ctx context.Context, id string, open bool) (gleaner.TrialStatus, error) {
	var t gleaner.TrialStatus
	err := c.query(ctx, id, "trial "+id, gleaner.QueryStatus, &t)
	if err != nil && !open {
		return c.trialFromResult(ctx, id)
	}
	return t, err
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

func byTrialID(a, b gleaner.TrialStatus) int { return byNumber(a.TrialID, b.TrialID) }

// TrialsView is TrialsNewest with every trial's state as its campaign
// classifies it (gleaner.ClassifyTrial), the states and counts Status
// gives: a trial paused with its campaign is paused, one that reached its
// budget is parked (or stopped at its rung once its searcher will not
// continue it), with its stage. The campaign's status is read while the
// trials are; its trials in flight that the server's search does not
// list yet (it lags a moment behind new trials) are asked for by their
// workflow ids, so the newest trials are never missing.
func (c *Client) TrialsView(ctx context.Context, name string, limit int) (TrialList, error) {
	type answered struct {
		s   gleaner.CampaignStatus
		err error
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	status := make(chan answered, 1)
	go func() {
		s, err := c.Status(sctx, name)
		status <- answered{s, err}
	}()
	l, err := c.TrialsNewest(ctx, name, limit)
	if err != nil {
		return l, err
	}
	a := <-status
	if a.err != nil {
		return l, nil // listed as the trials say; no status to classify by
	}
	l.Status = &a.s
	listed := map[string]bool{}
	for _, t := range l.Trials {
		listed[t.TrialID] = true
	}
	full := limit > 0 && len(l.Trials) >= limit
	for _, b := range a.s.Trials {
		if listed[b.TrialID] || b.WorkflowID == "" || l.Spec.Trial.Inline {
			continue // an inline campaign's are in its answer, or it is busy (Busy)
		}
		if full && byNumber(b.TrialID, l.Trials[0].TrialID) < 0 {
			continue // older than the newest limit
		}
		t := gleaner.TrialStatus{TrialID: b.TrialID, TrialProgress: gleaner.TrialProgress{State: b.State}}
		if err := c.query(ctx, b.WorkflowID, "trial "+b.WorkflowID, gleaner.QueryStatus, &t); err != nil {
			t, _ = c.trialFromResult(ctx, b.WorkflowID)
			t.TrialID = b.TrialID
		}
		l.Trials = append(l.Trials, t)
	}
	slices.SortFunc(l.Trials, byTrialID)
	if limit > 0 && len(l.Trials) > limit {
		l.Trials = l.Trials[len(l.Trials)-limit:]
	}
	ClassifyTrials(l.Trials, a.s)
	return l, nil
}

// ClassifyTrials sets each trial's state, and stage, to what its
// campaign's status s says of it (s.Trials: those in flight, parked or
// stopped at their rung); the others keep their own.
func ClassifyTrials(trials []gleaner.TrialStatus, s gleaner.CampaignStatus) {
	briefs := make(map[string]gleaner.TrialBrief, len(s.Trials))
	for _, b := range s.Trials {
		briefs[b.TrialID] = b
	}
	for i := range trials {
		if b, ok := briefs[trials[i].TrialID]; ok {
			trials[i].State = b.State
			if b.Stage != "" {
				trials[i].Stage = b.Stage
			}
		}
	}
}
