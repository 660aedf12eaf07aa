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
	"go.temporal.io/api/serviceerror"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// controlVerb is one of pause, resume and stop.
type controlVerb struct {
	name, short, long, example string
	do                         func(c *client.Client, ctx context.Context, name, reason string) (workflows.CampaignStatus, error)
}

var controlVerbs = []controlVerb{
	{
		name:  "pause",
		short: "Pause a running campaign: no new trials, running ones stop at a checkpoint",
		long: `Pauses a running campaign: it creates no trials and its running trials
checkpoint and give their nodes back; resume continues them from their
checkpoints. A campaign that is not running (already paused, stopping or
ended) rejects the pause: the reason is printed and the exit code is 4.`,
		example: `  gleaner pause go-mlp-spirals --reason "maintenance window"`,
		do:      (*client.Client).Pause,
	},
	{
		name:  "resume",
		short: "Resume a paused campaign",
		long: `Resumes a paused campaign: its trials continue from their checkpoints and it
creates trials again. A campaign that is not paused rejects the resume: the
reason is printed and the exit code is 4.`,
		example: `  gleaner resume go-mlp-spirals`,
		do:      (*client.Client).Resume,
	},
	{
		name:  "stop",
		short: "Stop a campaign: every trial stops at a checkpoint and the campaign ends",
		long: `Stops a running or paused campaign for good: its trials checkpoint and stop,
and the campaign ends as "stopped" once the last has reported; its
leaderboard stays. A campaign already stopping or ended rejects the stop:
the reason is printed and the exit code is 4.`,
		example: `  gleaner stop go-mlp-spirals --reason "good enough"`,
		do:      (*client.Client).Stop,
	},
}

type controlOptions struct {
	conn   connectOptions
	verb   controlVerb
	reason string
	json   bool
}

func newControlCmds() []*cobra.Command {
	var cmds []*cobra.Command
	for _, v := range controlVerbs {
		cmds = append(cmds, newControlCmd(v))
	}
	return cmds
}

func newControlCmd(v controlVerb) *cobra.Command {
	o := &controlOptions{verb: v}
	cmd := &cobra.Command{
		Use:     v.name + " CAMPAIGN",
		Short:   v.short,
		Long:    v.long + "\n\nOn success, prints the campaign's status after the change.",
		Example: v.example,
		Args:    exactArgs(1, "one CAMPAIGN name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.Flags(), args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.StringVar(&o.reason, "reason", "", "why, shown in the campaign's status")
	f.BoolVar(&o.json, "json", false, "print the status after the change as JSON")
	o.conn.addFlags(f)
	return cmd
}

func (o *controlOptions) run(ctx context.Context, flags *pflag.FlagSet, name string, stdout, stderr io.Writer) error {
	if err := checkCampaignName(name); err != nil {
		return err
	}
	o.conn.links = o.json // only the JSON has the campaign's link
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return err
	}
	defer closeClient()
	s, err := o.verb.do(c, ctx, name, o.reason)
	if err != nil {
		return controlErr(ctx, c, o.verb.name, name, err)
	}
	url := c.WorkflowURL(workflows.CampaignWorkflowID(name))
	if o.json {
		return writeJSON(stdout, statusJSON{s, url})
	}
	fmt.Fprintf(stdout, "%s: campaign %s is %s", o.verb.name, name, s.State)
	if s.Reason != "" {
		fmt.Fprintf(stdout, " (%s)", s.Reason)
	}
	fmt.Fprintf(stdout, ": %d/%d trials ended, %s\n", s.Ended(), s.MaxTrials, strings.Join(s.Census(), ", "))
	return nil
}

// controlErr classifies a failed update: the campaign's validator refused
// it, or the campaign has ended (exit 4); there is no such campaign (3);
// else the error as it is (1).
func controlErr(ctx context.Context, c *client.Client, verb, name string, err error) error {
	if msg, ok := rejection(err); ok {
		return withCode(ExitRejected, fmt.Errorf("%s rejected: %s", verb, msg))
	}
	// An update to a closed workflow fails as "not found" (or failed
	// precondition): tell an ended campaign from a missing one.
	var nf *serviceerror.NotFound
	var fp *serviceerror.FailedPrecondition
	if !errors.Is(err, client.ErrNotFound) && !errors.As(err, &nf) && !errors.As(err, &fp) {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, derr := c.Temporal().DescribeWorkflowExecution(dctx, workflows.CampaignWorkflowID(name), "")
	if derr != nil {
		if errors.As(derr, &nf) {
			return withCode(ExitNotFound, fmt.Errorf("campaign %q: %w", name, client.ErrNotFound))
		}
		return err
	}
	st := d.GetWorkflowExecutionInfo().GetStatus()
	if st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return err
	}
	state := strings.ToLower(strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_"))
	if res, werr := c.Wait(dctx, name); res.State != "" {
		state = string(res.State)
	} else if werr != nil && st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		state = "ended"
	}
	return withCode(ExitRejected, fmt.Errorf("%s rejected: campaign %s has already ended: it is %s", verb, name, state))
}
