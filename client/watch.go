package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner"
)

// Wait blocks until the campaign ends (following continue-as-new) and
// returns its result. A campaign that failed (budget.max_failures reached,
// or its workflow ended from outside) returns its result and a
// *FailedError naming its newest failed trials.
func (c *Client) Wait(ctx context.Context, name string) (gleaner.CampaignResult, error) {
	var res gleaner.CampaignResult
	if err := checkName("campaign", name); err != nil {
		return res, err
	}
	err := c.tc.GetWorkflow(ctx, gleaner.CampaignWorkflowID(name), "").Get(ctx, &res)
	if err != nil {
		if isNotFound(err) {
			return res, fmt.Errorf("campaign %q: %w", name, ErrNotFound)
		}
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.HasDetails() {
			_ = app.Details(&res)
		}
		var ended *temporal.WorkflowExecutionError
		if ctx.Err() == nil && errors.As(err, &ended) {
			return res, c.failure(ctx, name, res, err) // client/failures.go
		}
		return res, fmt.Errorf("campaign %q: %w", name, err)
	}
	return res, nil
}

// Progress is one observation of a watched campaign.
type Progress struct {
	Status gleaner.CampaignStatus
	Pool   *gleaner.PoolStatus // nil if the pool could not be read
	Err    error               // a query failed (the watch goes on)
}

// Done reports whether the campaign has ended.
func (p Progress) Done() bool {
	switch p.Status.State {
	case gleaner.CampaignCompleted, gleaner.CampaignStopped, gleaner.CampaignFailed:
		return true
	}
	return false
}

// Watch sends the campaign's status (and its pool's) at once and then
// every `every` (default 2s) until the campaign has ended (the last value
// is Done), is not found or has an invalid name (the last value's Err is
// ErrNotFound or ErrInvalidName) or ctx is
// done; then it closes the channel. Other query errors are sent and the
// watch goes on, backing off while they last (watchRetryDelay: up to 10s
// between queries). Read until the channel closes, or cancel ctx.
func (c *Client) Watch(ctx context.Context, name string, every time.Duration) <-chan Progress {
	if every <= 0 {
		every = 2 * time.Second
	}
	out := make(chan Progress)
	go func() {
		defer close(out)
		t := time.NewTimer(every)
		defer t.Stop()
		pool := ""
		failures := 0
		for {
			start := time.Now()
			var p Progress
			p.Status, p.Err = c.Status(ctx, name)
			if p.Err == nil {
				if pool == "" {
					pool = c.poolOf(ctx, name)
				}
				if ps, err := c.PoolStatus(ctx, pool); err == nil {
					p.Pool = &ps
				}
			}
			select {
			case out <- p:
			case <-ctx.Done():
				return
			}
			if p.Done() || errors.Is(p.Err, ErrNotFound) || errors.Is(p.Err, ErrInvalidName) {
				return
			}
			delay := every
			if p.Err != nil {
				failures++
				delay = watchRetryDelay(every, failures)
			} else {
				failures = 0
			}
			// The next query starts delay after this one started.
			t.Reset(max(0, delay-time.Since(start)))
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// watchRetryDelay is how long Watch waits after its failures-th query
// failure in a row (failures ≥ 1) before it queries again: `every` after
// the first, then twice as long each time, up to 10s (or `every` when that
// is longer), so that a server that is down is asked less often, and one
// that comes back is asked again within 10s of the last failure.
func watchRetryDelay(every time.Duration, failures int) time.Duration {
	limit := max(every, 10*time.Second)
	d := every
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
