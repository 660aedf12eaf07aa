package client

import (
	"context"
	"fmt"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// query runs a query on the latest run of a workflow; what names it in
// errors ("campaign \"x\"").
func (c *Client) query(ctx context.Context, workflowID, what, query string, out any) error {
	v, err := c.tc.QueryWorkflow(ctx, workflowID, "", query)
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		return fmt.Errorf("querying %s: %w", what, err)
	}
	if err := v.Get(out); err != nil {
		return fmt.Errorf("querying %s: %w", what, err)
	}
	return nil
}

// Status is the campaign's progress: counts, best so far, state. A query
// is answered by a worker, also once the campaign has ended.
func (c *Client) Status(ctx context.Context, name string) (gleaner.CampaignStatus, error) {
	var s gleaner.CampaignStatus
	if err := checkName("campaign", name); err != nil {
		return s, err
	}
	err := c.patientQuery(ctx, name, gleaner.QueryStatus, &s, func(snap gleaner.CampaignSnapshot) { s = snap.Status })
	return s, err
}

// QueryPatience is how long Status, Leaderboard and TrialsNewest wait for
// an inline campaign (spec trial.inline) to answer a query before they use
// what it keeps outside its workflow tasks: the snapshot in its memo
// (gleaner.CampaignSnapshot, at most gleaner.InlineCountsEvery old;
// CampaignStatus.AsOf says when) or its records chunks. Such a campaign
// ends trials in most of its workflow tasks, and a query waits for the
// task in hand; the memo is read meanwhile, so a command takes about
// QueryPatience at worst. Zero or less: no query when there is a
// snapshot (for trials, the chunks alone).
var QueryPatience = 400 * time.Millisecond

// patientQuery queries a campaign and, when the query has not answered
// within half of QueryPatience, also reads the snapshot in its memo; when
// the query takes longer than QueryPatience and there is a snapshot, it
// answers from that (fromSnapshot), else it goes on waiting for the query.
func (c *Client) patientQuery(ctx context.Context, name, query string, out any, fromSnapshot func(gleaner.CampaignSnapshot)) error {
	id, what := gleaner.CampaignWorkflowID(name), fmt.Sprintf("campaign %q", name)
	if QueryPatience <= 0 {
		if snap := c.memoSnapshot(ctx, id); snap != nil {
			fromSnapshot(*snap)
			return nil
		}
		return c.query(ctx, id, what, query, out)
	}
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queried := make(chan error, 1)
	go func() { queried <- c.query(qctx, id, what, query, out) }()
	// A query answered within half the patience costs no memo read.
	half := time.NewTimer(QueryPatience / 2)
	defer half.Stop()
	select {
	case err := <-queried:
		return err
	case <-half.C:
	}
	snapshot := make(chan *gleaner.CampaignSnapshot, 1)
	go func() { snapshot <- c.memoSnapshot(qctx, id) }()
	patience := time.NewTimer(QueryPatience - QueryPatience/2)
	defer patience.Stop()
	select {
	case err := <-queried:
		return err
	case <-patience.C:
	}
	select {
	case err := <-queried:
		return err
	case snap := <-snapshot:
		if snap == nil { // none, or unreadable: the query it is
			return <-queried
		}
		select {
		case err := <-queried:
			if err == nil {
				return nil // an answer that came meanwhile is fresher
			}
		default:
			cancel()
			<-queried // out is written by one goroutine only
		}
		fromSnapshot(*snap)
		return nil
	}
}

// memoSnapshot reads the snapshot an inline campaign keeps in its memo;
// nil when there is none or it cannot be read.
func (c *Client) memoSnapshot(ctx context.Context, id string) *gleaner.CampaignSnapshot {
	d, err := c.tc.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil
	}
	p := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[gleaner.MemoSnapshot]
	var snap gleaner.CampaignSnapshot
	if p == nil || c.opts.DataConverter.FromPayload(p, &snap) != nil {
		return nil
	}
	return &snap
}

// Leaderboard is the campaign's trials that reported the objective, best
// first (at most gleaner.LeaderboardSize).
func (c *Client) Leaderboard(ctx context.Context, name string) ([]gleaner.LeaderboardEntry, error) {
	var l []gleaner.LeaderboardEntry
	if err := checkName("campaign", name); err != nil {
		return nil, err
	}
	err := c.patientQuery(ctx, name, gleaner.QueryLeaderboard, &l, func(snap gleaner.CampaignSnapshot) { l = snap.Leaderboard })
	return l, err
}

// poolOf is the pool a campaign runs in (from its start input), "default"
// when it cannot be read.
func (c *Client) poolOf(ctx context.Context, name string) string {
	var in gleaner.CampaignInput
	if err := c.startInput(ctx, gleaner.CampaignWorkflowID(name), &in); err != nil || in.Spec.Pool == "" {
		return "default"
	}
	return in.Spec.Pool
}

// PoolStatus is a pool's nodes, trials and last allocation.
func (c *Client) PoolStatus(ctx context.Context, pool string) (gleaner.PoolStatus, error) {
	var s gleaner.PoolStatus
	if err := checkName("pool", pool); err != nil {
		return s, err
	}
	err := c.query(ctx, gleaner.PoolWorkflowID(pool), fmt.Sprintf("pool %q", pool), gleaner.QueryStatus, &s)
	return s, err
}

// PoolLibrary is the curves a pool learned from the trials that left it
// (gleaner.QueryLibrary).
func (c *Client) PoolLibrary(ctx context.Context, pool string) (gleaner.PoolLibrary, error) {
	var l gleaner.PoolLibrary
	if err := checkName("pool", pool); err != nil {
		return l, err
	}
	err := c.query(ctx, gleaner.PoolWorkflowID(pool), fmt.Sprintf("pool %q", pool), gleaner.QueryLibrary, &l)
	return l, err
}
