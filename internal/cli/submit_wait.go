package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// wait is submit --wait: the campaign's progress until it ends, then its
// summary. A campaign that failed returns Wait's *client.FailedError,
// which names its failed trials, their exit status and their logs' last
// lines (exit 1).
func (o *submitOptions) waitFor(ctx context.Context, c *client.Client, camp client.Campaign, spec gleaner.CampaignSpec, stdout, stderr io.Writer) error {
	trouble := newWatchTrouble(stderr, o.conn.resolved.HostPort, nil, nil)
	if _, err := followProgress(ctx, c, camp.Name, o.interval, stdout, trouble); err != nil {
		return err
	}
	res, err := c.Wait(ctx, camp.Name)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	writeResult(stdout, camp, res, spec)
	return err
}

// writeResult is the summary of an ended campaign: its counts, why it
// ended (a failed campaign's reason comes with its error instead), its
// warnings (trials that never reported the objective metric), its
// leaderboard (a campaign of several objectives': its Pareto front and
// the trials by non-dominated rank, as leaderboard prints them) and its
// link.
func writeResult(w io.Writer, camp client.Campaign, res workflows.CampaignResult, spec gleaner.CampaignSpec) {
	fmt.Fprintf(w, "campaign %s %s: %d completed, %d stopped, %d failed\n",
		camp.Name, res.State, res.Completed, res.Stopped, res.Failed)
	if res.Reason != "" && res.State != workflows.CampaignFailed {
		fmt.Fprintf(w, "  reason    %s\n", res.Reason)
	}
	for _, warning := range res.Warnings {
		fmt.Fprintf(w, "  warning   %s\n", warning)
	}
	switch {
	case res.Pareto != nil && spec.MultiObjective():
		writeParetoLeaderboard(w, res.Leaderboard, res.Pareto, spec.ObjectiveList(), spec.Constraints) // pareto.go
	case len(res.Leaderboard) > 0:
		writeLeaderboard(w, res.Leaderboard)
	}
	if camp.UIURL != "" {
		fmt.Fprintf(w, "  ui        %s\n", camp.UIURL)
	}
}
