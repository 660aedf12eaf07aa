package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc/codes"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

type listOptions struct {
	conn    connectOptions
	json    bool
	limit   int
	running bool

	now func() time.Time // time.Now unless a test sets it
}

func newListCmd() *cobra.Command {
	o := &listOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the campaigns: state, trials ended and in flight, best score, age",
		Long: `Lists the namespace's campaigns, newest first: each one's state (running,
paused, stopping, completed, stopped, failed; or terminated, timed_out,
canceled for a workflow ended from outside Gleaner), its trials ended out of
budget.max_trials with the percentage, its trials in flight (started and
not ended: running, or waiting for nodes), its best value of the
objective metric so far, and how long ago it started.

It reads the server's visibility store (Gleaner's search attributes, which
` + "`gleaner setup`" + ` registers), where a campaign's counts lag a moment
behind its own status: ` + "`gleaner status NAME`" + ` asks the campaign.

--json prints one JSON array (each campaign's name, workflow and run ids,
state, trials_done, trials_running, max_trials, objective, mode, best,
started, closed and ui_url).`,
		Example: `  gleaner list
  gleaner list --running
  gleaner list --json | jq -r '.[] | select(.state == "failed") | .name'`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.IntVar(&o.limit, "limit", 100, "show the newest N campaigns (0: all)")
	f.BoolVar(&o.running, "running", false, "only campaigns whose workflow runs (running, paused, stopping)")
	o.conn.addFlags(f)
	o.conn.links = true
	return cmd
}

func (o *listOptions) run(ctx context.Context, flags *pflag.FlagSet, stdout, stderr io.Writer) error {
	if o.limit < 0 {
		return usageErrorf("--limit: %d must not be negative (0: all)", o.limit)
	}
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return err
	}
	defer closeClient()
	// One more than the limit tells whether some were left out.
	fetch := o.limit
	if fetch > 0 {
		fetch++
	}
	list, err := c.List(ctx, client.ListOptions{Limit: fetch, Running: o.running})
	if err != nil {
		if serviceerror.ToStatus(err).Code() == codes.InvalidArgument && strings.Contains(err.Error(), workflows.GleanerKind.GetName()) {
			return fmt.Errorf("%w\n  the namespace lacks Gleaner's search attributes: register them with %s", err,
				commandHint(hintFlags(flags, false), "setup"))
		}
		return err
	}
	cut := o.limit > 0 && len(list) > o.limit
	if cut {
		list = list[:o.limit]
	}
	if o.json {
		if list == nil {
			list = []client.CampaignSummary{}
		}
		return writeJSON(stdout, list)
	}
	if len(list) == 0 {
		what := "no campaigns"
		if o.running {
			what = "no running campaigns"
		}
		fmt.Fprintf(stdout, "%s in namespace %s (submit one: %s)\n", what, o.conn.resolved.Namespace,
			commandHint(hintFlags(flags, true), "submit", "-f", "CAMPAIGN.yaml"))
		return nil
	}
	now := time.Now
	if o.now != nil {
		now = o.now
	}
	writeCampaignList(stdout, list, now())
	if cut {
		fmt.Fprintf(stdout, "(the newest %d; --limit 0 shows all)\n", o.limit)
	}
	return nil
}

// writeCampaignList prints campaigns as a table, ages as of now.
func writeCampaignList(w io.Writer, list []client.CampaignSummary, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CAMPAIGN\tSTATE\tTRIALS\tIN FLIGHT\tBEST\tAGE")
	for _, s := range list {
		trials := fmt.Sprintf("%d", s.TrialsDone)
		if s.MaxTrials > 0 {
			trials = fmt.Sprintf("%d/%d (%.0f%%)", s.TrialsDone, s.MaxTrials, 100*s.Progress())
		}
		best := "-"
		switch {
		case s.Objectives > 0 && s.Hypervolume != nil:
			best = fmt.Sprintf("hypervolume %.6g (%d objectives)", *s.Hypervolume, s.Objectives)
		case s.Objectives > 0:
			best = fmt.Sprintf("- (%d objectives)", s.Objectives)
		case s.Best != nil:
			best = fmt.Sprintf("%.6g", *s.Best)
			if s.Objective != "" {
				best = fmt.Sprintf("%s %s (%s)", s.Objective, best, s.Mode)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, s.State, trials, s.TrialsRunning, best, formatAge(now.Sub(s.Started)))
	}
	_ = tw.Flush()
}

// formatAge is a duration as a person reads an age: "45s", "12m",
// "3h20m", "5d4h".
func formatAge(d time.Duration) string {
	switch d = max(0, d); {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return strings.TrimSuffix(fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60), "00m")
	default:
		return strings.TrimSuffix(fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24), "0h")
	}
}
