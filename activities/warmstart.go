package activities

import (
	"context"
	"errors"
	"fmt"
	"math"

	"go.temporal.io/sdk/temporal"

	gclient "github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// WarmStart reads the named campaigns' trials (as `gleaner trials` does:
// open ones by query, closed ones from their results) and returns every
// finished one that reported the metric with parameters inside the
// space. A campaign that does not exist fails it for good: the spec names
// it (search.warm_start).
func (a *Activities) WarmStart(ctx context.Context, in workflows.WarmStartInput) (workflows.WarmStartResult, error) {
	c := gclient.New(a.Client, gclient.Options{})
	res := workflows.WarmStartResult{Taken: map[string]int{}, Skipped: map[string]int{}}
	for i, name := range in.Campaigns {
		trials, err := c.Trials(ctx, name)
		if errors.Is(err, gclient.ErrNotFound) {
			return res, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("search.warm_start[%d]: campaign %q not found", i, name), workflows.ErrTypeInvalidSpec, err)
		}
		if err != nil {
			return res, fmt.Errorf("search.warm_start[%d]: %w", i, err)
		}
		for _, t := range trials {
			v, ok := t.Metrics[in.Metric]
			finished := t.State == workflows.TrialCompleted || t.State == workflows.TrialStopped
			if !finished || !ok || math.IsNaN(v) || math.IsInf(v, 0) || in.Space.Contains(t.Params) != nil {
				res.Skipped[name]++
				continue
			}
			res.Observations = append(res.Observations, hpo.Observation{Params: t.Params, Metric: v, Stopped: t.State == workflows.TrialStopped})
			res.Taken[name]++
		}
	}
	return res, nil
}
