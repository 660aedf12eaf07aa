package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

type submitOptions struct {
	conn     connectOptions
	file     string
	name     string
	wait     bool
	interval time.Duration
	trainer  trainerCheck // submit_check.go
}

func newSubmitCmd() *cobra.Command {
	o := &submitOptions{}
	cmd := &cobra.Command{
		Use:   "submit -f CAMPAIGN.yaml",
		Short: "Validate a campaign spec and start the campaign",
		Long: `Loads a campaign spec (YAML or JSON, docs/campaign-spec.md), applies its
defaults and validates it before anything starts: an invalid spec exits 2
naming the file and the field. Then starts the campaign on the task queue
and prints its name, workflow id and web UI link. Warns on stderr (and
still exits 0) when no worker polls the task queue: the campaign waits
until one does.

With --wait, follows the campaign's progress until it ends and prints its
counts, its warnings (trials that never reported the objective metric)
and its leaderboard (its best 10). A campaign that failed exits 1, naming
its newest failed trials with their exit status, log path and the last
lines of their logs. Ctrl-C stops only the following (exit 130): the
campaign goes on, and the message says how to follow or stop it.`,
		Example: `  gleaner submit -f examples/go-mlp/campaign.yaml
  gleaner submit -f campaign.json --name spirals-2 --wait
  TEMPORAL_ADDRESS=temporal.example.org:7233 gleaner submit -f campaign.yaml`,
		Args: exactArgs(0, "no arguments (the spec is -f FILE)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd.Context()) // interrupt.go
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
	o.trainer.addFlags(f)
	o.conn.addFlags(f)
	o.conn.links = true
	return cmd
}

// spec loads, defaults and validates the spec: exit 2 on any problem, all
// before anything contacts the server. Loading stops once ctx is done
// (SIGINT, SIGTERM): that error is not the spec's, and exits 1.
func (o *submitOptions) spec(ctx context.Context) (gleaner.CampaignSpec, error) {
	if o.file == "" {
		return gleaner.CampaignSpec{}, usageErrorf("--file (-f): required: the campaign spec to submit")
	}
	if o.interval <= 0 {
		return gleaner.CampaignSpec{}, usageErrorf("--interval %v: must be positive", o.interval)
	}
	if o.name != "" {
		if err := gleaner.ValidateName("--name", o.name); err != nil {
			return gleaner.CampaignSpec{}, withCode(ExitUsage, err)
		}
	}
	spec, err := gleaner.LoadSpecContext(ctx, o.file)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return spec, fmt.Errorf("interrupted while loading the campaign spec: %w", err)
		}
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
	return o.trainer.apply(spec, o.file)
}

func (o *submitOptions) run(ctx context.Context, flags *pflag.FlagSet, stdout, stderr io.Writer) error {
	spec, err := o.spec(ctx)
	if err != nil {
		return interrupted(ctx, err)
	}
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return interrupted(ctx, err)
	}
	defer closeClient()

	camp, err := c.Submit(ctx, spec)
	if err != nil {
		if errors.Is(err, client.ErrExists) {
			return withCode(ExitRejected, err)
		}
		if interruptedBy(ctx) != nil { // the server may have started it
			return interrupted(ctx, fmt.Errorf("%w (it may have started: %s)", err,
				commandHint(hintFlags(flags, true), "status", spec.Name)))
		}
		return err
	}
	fmt.Fprintf(stdout, "submitted campaign %s: %d trials, %s\n", camp.Name, spec.Budget.MaxTrials, spec.ObjectiveText())
	fmt.Fprintf(stdout, "  workflow  %s (run %s)\n", camp.WorkflowID, camp.RunID)
	fmt.Fprintf(stdout, "  trials    %s\n", trialModeLine(spec))
	if camp.UIURL != "" {
		fmt.Fprintf(stdout, "  ui        %s\n", camp.UIURL)
	}
	cfg := o.conn.resolved
	warnIfNoWorker(ctx, c.Temporal(), cfg, camp.Name, stderr, commandHint(hintFlags(flags, false), "worker"))
	if !o.wait {
		fmt.Fprintf(stdout, "  follow    %s\n", commandHint(hintFlags(flags, true), "status", camp.Name, "--watch"))
		return nil
	}

	// Ctrl-C now stops only the following: say so (interrupt.go).
	return followInterrupted(ctx, o.waitFor(ctx, c, camp, spec, stdout, stderr), camp.Name, flags)
}

// taskQueueDescriber is what warnIfNoWorker asks; a Temporal client is one.
type taskQueueDescriber interface {
	DescribeTaskQueue(ctx context.Context, taskQueue string, typ enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error)
}

// noWorkerCheckTimeout bounds the look for a worker after a submit.
const noWorkerCheckTimeout = 5 * time.Second

// warnIfNoWorker warns on w when no worker has polled cfg's task queue for
// workflow tasks lately (the server lists the pollers of the last minutes):
// the campaign then waits, with nothing said, until one does. startWorker
// is the command that starts one. The check is advice: when it cannot be
// made (the server refuses to describe task queues, say) it says nothing,
// and the submit stands either way.
func warnIfNoWorker(ctx context.Context, d taskQueueDescriber, cfg client.Connection, campaign string, w io.Writer, startWorker string) {
	ctx, cancel := context.WithTimeout(ctx, noWorkerCheckTimeout)
	defer cancel()
	resp, err := d.DescribeTaskQueue(ctx, cfg.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil || len(resp.GetPollers()) > 0 {
		return
	}
	fmt.Fprintf(w, "gleaner submit: warning: no worker polls task queue %s on %s (namespace %s): campaign %s waits until one does\n"+
		"  start one with: %s\n", cfg.TaskQueue, cfg.HostPort, cfg.Namespace, campaign, startWorker)
}

// trialModeLine says how the campaign runs its trials and why
// (gleaner.CampaignSpec.PickTrialMode, as client.Submit decided it).
func trialModeLine(spec gleaner.CampaignSpec) string {
	inline, reason := spec.PickTrialMode()
	mode := "a workflow each"
	if inline {
		mode = "inline (activities of the campaign's workflow)"
		if workflows.Pipelined(spec.WithTrialMode()) {
			mode = "inline, pipelined (the next trials queued behind each running one)"
		}
	}
	return mode + ": " + reason
}
