package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-hpc/gleaner/workflows"
)

type leaderboardOptions struct {
	conn connectOptions
	json bool
	top  int
}

func newLeaderboardCmd() *cobra.Command {
	o := &leaderboardOptions{}
	cmd := &cobra.Command{
		Use:   "leaderboard CAMPAIGN",
		Short: "Show a campaign's best trials, best first",
		Long: `Prints the campaign's leaderboard: its trials that have reported the
objective, best first (ties: the earlier trial first), with rank, trial,
score (the best value the trial reported), state (as status and trials
show it: running, pending, paused, parked, stopped-at-rung, completed,
stopped), stage (a rung, a generation, for searchers that label trials),
samples trained, restarts after failures and parameters. Failed trials
leave the leaderboard. Its first entry is the best status shows, which
never gets worse. An empty leaderboard
says why when the campaign knows: trials that finished without ever
reporting the objective metric (see gleaner status).

A campaign of several objectives or with constraints prints its Pareto
front's size and hypervolume first, then per trial its non-dominated
rank (1: on the front), each objective's value and, with constraints,
whether it is feasible; the trials go by rank, then the least crowded
first (docs/campaign-spec.md).

--json prints one JSON array of entries, best first (warnings go to
stderr); with several objectives each has values, constraints,
infeasible and rank.`,
		Example: `  gleaner leaderboard go-mlp-spirals
  gleaner leaderboard go-mlp-spirals --top 3
  gleaner leaderboard go-mlp-spirals --json | jq '.[0].params'`,
		Args: exactArgs(1, "one CAMPAIGN name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.Flags(), args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.IntVar(&o.top, "top", 0, "print only the best N entries (0: all)")
	o.conn.addFlags(f)
	return cmd
}

func (o *leaderboardOptions) validate(name string) error {
	if err := checkCampaignName(name); err != nil {
		return err
	}
	if o.top < 0 {
		return usageErrorf("--top %d: must not be negative", o.top)
	}
	return nil
}

func (o *leaderboardOptions) run(ctx context.Context, flags *pflag.FlagSet, name string, stdout, stderr io.Writer) error {
	if err := o.validate(name); err != nil {
		return err
	}
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return err
	}
	defer closeClient()
	l, err := c.Leaderboard(ctx, name)
	if err != nil {
		return campaignErr(name, err)
	}
	l = topN(l, o.top)
	var why *workflows.CampaignStatus
	if !o.json && slices.ContainsFunc(l, func(e workflows.LeaderboardEntry) bool { return e.Values != nil }) {
		// Several objectives: their names and the front come with the status.
		if s, err := c.Status(ctx, name); err == nil && s.Pareto != nil {
			writeParetoLeaderboard(stdout, l, s.Pareto, s.Objectives, s.Constraints) // pareto.go
			return nil
		}
	}
	if len(l) == 0 {
		// Say why it is empty: the campaign warns when its trials finish
		// without the objective. Without the status, the bare message.
		if s, err := c.Status(ctx, name); err == nil {
			why = &s
		}
	}
	if o.json {
		if l == nil {
			l = []workflows.LeaderboardEntry{}
		}
		if why != nil {
			for _, w := range why.Warnings {
				fmt.Fprintf(stderr, "warning: %s\n", w)
			}
		}
		return writeJSON(stdout, l)
	}
	if len(l) == 0 {
		writeEmptyLeaderboard(stdout, name, why)
		return nil
	}
	writeLeaderboard(stdout, l)
	return nil
}

// writeEmptyLeaderboard says that no trial has reported the objective and,
// when the campaign's status s is known, why.
func writeEmptyLeaderboard(w io.Writer, name string, s *workflows.CampaignStatus) {
	if s == nil {
		fmt.Fprintf(w, "campaign %s: no trial has reported the objective yet\n", name)
		return
	}
	fmt.Fprintf(w, "campaign %s: no trial has reported objective metric %q yet (%d of %d trials ended, %s)\n",
		name, s.Objective, s.Ended(), s.MaxTrials, strings.Join(s.Census(), ", "))
	for _, warning := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
}

// topN is the first n entries (all for n = 0).
func topN(l []workflows.LeaderboardEntry, n int) []workflows.LeaderboardEntry {
	if n > 0 && len(l) > n {
		return l[:n]
	}
	return l
}

// writeLeaderboard prints entries, best first, as a table.
func writeLeaderboard(w io.Writer, l []workflows.LeaderboardEntry) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// STAGE (a rung, a generation) only for searchers that label trials.
	staged := slices.ContainsFunc(l, func(e workflows.LeaderboardEntry) bool { return e.Stage != "" })
	stage := func(e workflows.LeaderboardEntry) string {
		switch {
		case !staged:
			return ""
		case e.Stage == "":
			return "-\t"
		}
		return e.Stage + "\t"
	}
	head := "RANK\tTRIAL\tSCORE\tSTATE\tSAMPLES\tRESTARTS\tPARAMS"
	if staged {
		head = "RANK\tTRIAL\tSCORE\tSTATE\tSTAGE\tSAMPLES\tRESTARTS\tPARAMS"
	}
	fmt.Fprintln(tw, head)
	for i, e := range l {
		fmt.Fprintf(tw, "%d\t%s\t%.6g\t%s\t%s%s\t%d\t%s\n",
			i+1, e.TrialID, e.Score, e.State, stage(e), formatCount(e.Samples), e.Restarts, e.Params.Format(4))
	}
	_ = tw.Flush()
}

// formatCount is a sample count for people: 950, 12.3k, 4.5M.
func formatCount(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.1fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}
