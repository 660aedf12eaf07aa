package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
)

type submitOptions struct {
	conn     connectOptions
	file     string
	name     string
	wait     bool
	interval time.Duration
}

func newSubmitCmd() *cobra.Command {
	o := &submitOptions{}
	cmd := &cobra.Command{
		Use:   "submit -f CAMPAIGN.yaml",
		Short: "Validate a campaign spec and start the campaign",
		Long: `Loads a campaign spec (YAML or JSON, docs/campaign-spec.md), applies its
defaults and validates it before anything starts: an invalid spec exits 2
naming the file and the field. Then starts the campaign on the task queue
and prints its name, workflow id and web UI link.

With --wait, follows the campaign's progress until it ends and prints its
leaderboard (its best 10); exits 1 if the campaign failed.`,
		Example: `  gleaner submit -f examples/go-mlp/campaign.yaml
  gleaner submit -f campaign.json --name spirals-2 --wait
  TEMPORAL_ADDRESS=temporal.example.org:7233 gleaner submit -f campaign.yaml`,
		Args: exactArgs(0, "no arguments (the spec is -f FILE)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "campaign spec, YAML or JSON (required)")
	f.StringVar(&o.name, "name", "", "campaign name, instead of the spec's name")
	f.BoolVar(&o.wait, "wait", false, "follow progress until the campaign ends, then print its leaderboard")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "with --wait: how often to refresh the progress")
	o.conn.addFlags(f)
	return cmd
}

// spec loads, defaults and validates the spec: exit 2 on any problem.
func (o *submitOptions) spec() (gleaner.CampaignSpec, error) {
	if o.file == "" {
		return gleaner.CampaignSpec{}, usageErrorf("--file (-f): required: the campaign spec to submit")
	}
	if o.interval <= 0 {
		return gleaner.CampaignSpec{}, usageErrorf("--interval %v: must be positive", o.interval)
	}
	spec, err := gleaner.LoadSpec(o.file)
	if err != nil {
		if strings.Contains(err.Error(), o.file) { // LoadSpec names the file
			return spec, withCode(ExitUsage, fmt.Errorf("campaign spec: %w", err))
		}
		return spec, withCode(ExitUsage, fmt.Errorf("campaign spec %s: %w", o.file, err))
	}
	if o.name != "" {
		spec.Name = o.name
	}
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return spec, withCode(ExitUsage, fmt.Errorf("campaign spec %s: %w", o.file, err))
	}
	return spec, nil
}

func (o *submitOptions) run(ctx context.Context, flags *pflag.FlagSet, stdout, stderr io.Writer) error {
	spec, err := o.spec()
	if err != nil {
		return err
	}
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return err
	}
	defer closeClient()

	camp, err := c.Submit(ctx, spec)
	if err != nil {
		if errors.Is(err, client.ErrExists) {
			return withCode(ExitRejected, err)
		}
		return err
	}
	fmt.Fprintf(stdout, "submitted campaign %s: %d trials, %s %s\n", camp.Name, spec.Budget.MaxTrials, spec.Objective.Mode, spec.Objective.Metric)
	fmt.Fprintf(stdout, "  workflow  %s (run %s)\n", camp.WorkflowID, camp.RunID)
	if camp.UIURL != "" {
		fmt.Fprintf(stdout, "  ui        %s\n", camp.UIURL)
	}
	if !o.wait {
		return nil
	}

	if _, err := followProgress(ctx, c, camp.Name, o.interval, stdout); err != nil {
		return err
	}
	res, waitErr := c.Wait(ctx, camp.Name)
	fmt.Fprintf(stdout, "campaign %s %s: %d completed, %d stopped, %d failed\n",
		camp.Name, res.State, res.Completed, res.Stopped, res.Failed)
	if res.Reason != "" {
		fmt.Fprintf(stdout, "  reason    %s\n", res.Reason)
	}
	if len(res.Leaderboard) > 0 {
		writeLeaderboard(stdout, res.Leaderboard)
	}
	if camp.UIURL != "" {
		fmt.Fprintf(stdout, "  ui        %s\n", camp.UIURL)
	}
	return waitErr
}
