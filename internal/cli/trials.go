package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-hpc/gleaner/workflows"
)

type trialsOptions struct {
	conn  connectOptions
	json  bool
	limit int
}

func newTrialsCmd() *cobra.Command {
	o := &trialsOptions{}
	cmd := &cobra.Command{
		Use:   "trials CAMPAIGN",
		Short: "List a campaign's trials: state, nodes, samples, restarts, checkpoint",
		Long: `Prints every trial of the campaign, by number: its state (pending, running,
paused, completed, stopped, failed), the nodes it runs on now, the samples
it has trained, its restarts after failures and rescales (relaunches for a
new node count, a preemption or a resume), its latest checkpoint and its
latest value of the campaign's objective metric. A trial that finished
without ever reporting that metric says so in its state, and the campaign's
warnings follow the table.

--json prints one JSON array of trial statuses (with the full checkpoint
path, every metric and the parameters); warnings go to stderr.

--limit N (default 1000) shows the newest N trials by number, so the answer
comes quickly at any campaign size (a 100,000-trial inline campaign: under
a second); --limit 0 shows them all.`,
		Example: `  gleaner trials go-mlp-spirals
  gleaner trials go-mlp-spirals --json | jq '.[] | select(.state == "failed") | .error'`,
		Args: exactArgs(1, "one CAMPAIGN name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.Flags(), args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.IntVar(&o.limit, "limit", 1000, "show the newest N trials (0: all)")
	o.conn.addFlags(f)
	return cmd
}

func (o *trialsOptions) run(ctx context.Context, flags *pflag.FlagSet, name string, stdout, stderr io.Writer) error {
	if err := checkCampaignName(name); err != nil {
		return err
	}
	if o.limit < 0 {
		return withCode(ExitUsage, fmt.Errorf("--limit: %d must not be negative (0: all)", o.limit))
	}
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return err
	}
	defer closeClient()
	// The list carries the spec: its objective names the metric, and an
	// unknown campaign (exit 3) is told from one without trials yet; and
	// the campaign's status, read meanwhile, which classifies the trials
	// (paused, parked, stopped at their rung) as status counts them.
	list, err := c.TrialsView(ctx, name, o.limit)
	if err != nil {
		return campaignErr(name, err)
	}
	trials, spec := list.Trials, list.Spec
	if list.Busy {
		fmt.Fprintf(stderr, "note: campaign %s is busy: its trials in flight and those ended in the last %d are not listed\n",
			name, workflows.InlineRecordsChunk)
	}
	var warnings []string
	created := 0
	if s := list.Status; s != nil {
		warnings, created = s.Warnings, s.Created
	}
	if o.json {
		if trials == nil {
			trials = []workflows.TrialStatus{}
		}
		for _, w := range warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		return writeJSON(stdout, trials)
	}
	if len(trials) == 0 {
		fmt.Fprintf(stdout, "campaign %s has no trials yet\n", name)
		return nil
	}
	writeTrials(stdout, trials, spec.PrimaryObjective().Metric)
	writeTrialFailures(stdout, trials) // failures.go: each reason whole
	if note := trialsNote(trials, o.limit, created, list.Busy); note != "" {
		fmt.Fprintln(stdout, note)
	}
	for _, w := range warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	return nil
}

// trialsNote says what part of the campaign's created trials the list
// shows: the newest limit (by trial id, so it names the range), or, when
// it is short for another reason, that the server's search lags.
func trialsNote(trials []workflows.TrialStatus, limit, created int, busy bool) string {
	switch {
	case len(trials) == 0 || created <= len(trials):
		return ""
	case limit > 0 && len(trials) == limit:
		return fmt.Sprintf("(the newest %d of %d trials, %s to %s; --limit 0 shows all)",
			len(trials), created, trials[0].TrialID, trials[len(trials)-1].TrialID)
	case busy:
		return "" // said on stderr
	}
	return fmt.Sprintf("(%d of %d trials: the server's search does not list the others yet; ask again in a moment)",
		len(trials), created)
}

// missedObjective: t finished without ever reporting the objective.
func missedObjective(t workflows.TrialStatus) bool {
	return workflows.EndedWithoutObjective(t.State, t.ObjectiveSeen, t.Metrics)
}

// writeTrials prints trials as a table; a trial that finished without the
// objective metric says so in its state. STAGE (a rung, a generation)
// only for searchers that label trials.
func writeTrials(w io.Writer, trials []workflows.TrialStatus, metric string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	staged := slices.ContainsFunc(trials, func(t workflows.TrialStatus) bool { return t.Stage != "" })
	stage := func(t workflows.TrialStatus) string {
		switch {
		case !staged:
			return ""
		case t.Stage == "":
			return "\t-"
		}
		return "\t" + t.Stage
	}
	head := "TRIAL\tSTATE"
	if staged {
		head += "\tSTAGE"
	}
	fmt.Fprintf(tw, "%s\tNODES\tSAMPLES\tRESTARTS\tRESCALES\tCHECKPOINT\t%s\n", head, strings.ToUpper(metric))
	for _, t := range trials {
		score := "-"
		if v, ok := t.Metrics[metric]; ok && !math.IsNaN(v) {
			score = fmt.Sprintf("%.6g", v)
		}
		ckpt := "-"
		if t.Checkpoint != "" {
			ckpt = filepath.Base(t.Checkpoint)
		}
		state := string(t.State)
		if t.Error != "" && t.State == workflows.TrialFailed {
			state += " (" + failureBrief(t.Error) + ")" // failures.go
		}
		if missedObjective(t) {
			state += " (no " + metric + " reported)"
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%d\t%s\t%d\t%d\t%s\t%s\n",
			t.TrialID, state, stage(t), len(t.Nodes), formatCount(t.Samples), t.Restarts, t.Rescales, ckpt, score)
	}
	_ = tw.Flush()
}

// firstLine is s's first line, cut to n runes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
