package cli

import (
	"context"
	"encoding/json"
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
	"go.temporal.io/api/serviceerror"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

type statusOptions struct {
	conn     connectOptions
	watch    bool
	json     bool
	interval time.Duration
}

func newStatusCmd() *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status CAMPAIGN",
		Short: "Show a campaign's state, trial counts, best score and progress",
		Long: `Prints the campaign's state (running, paused, stopping, completed, stopped,
failed), its trial counts, the trials running and pending, the best score
with its trial and parameters, the search's progress and the web UI link.

With --watch, redraws a one-line progress bar (trials done/total, running,
nodes in use in the campaign's pool, best score) every --interval until the
campaign ends; when stdout is not a terminal it writes a plain line each
time the progress changes instead. --watch exits 1 if the campaign failed.

--json prints the status as one JSON object (with --watch, one per line).`,
		Example: `  gleaner status go-mlp-spirals
  gleaner status go-mlp-spirals --watch
  gleaner status go-mlp-spirals --json | jq .best.score`,
		Args: exactArgs(1, "one CAMPAIGN name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.Flags(), args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.BoolVarP(&o.watch, "watch", "w", false, "follow the campaign with a progress bar until it ends")
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "with --watch: how often to refresh")
	o.conn.addFlags(f)
	return cmd
}

func (o *statusOptions) validate(name string) error {
	if err := checkCampaignName(name); err != nil {
		return err
	}
	if o.interval <= 0 {
		return usageErrorf("--interval %v: must be positive", o.interval)
	}
	return nil
}

func (o *statusOptions) run(ctx context.Context, flags *pflag.FlagSet, name string, stdout, stderr io.Writer) error {
	if err := o.validate(name); err != nil {
		return err
	}
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return err
	}
	defer closeClient()
	url := c.WorkflowURL(workflows.CampaignWorkflowID(name))

	if !o.watch {
		s, err := c.Status(ctx, name)
		if err != nil {
			return campaignErr(name, err)
		}
		if o.json {
			return writeJSON(stdout, statusJSON{s, url})
		}
		writeStatus(stdout, s, url)
		return nil
	}

	var last workflows.CampaignStatus
	if o.json {
		enc := json.NewEncoder(stdout)
		for p := range c.Watch(ctx, name, o.interval) {
			if p.Err != nil {
				if isNotFound(p.Err) {
					return campaignErr(name, p.Err)
				}
				continue
			}
			last = p.Status
			if err := enc.Encode(statusJSON{p.Status, url}); err != nil {
				return err
			}
		}
	} else {
		if last, err = followProgress(ctx, c, name, o.interval, stdout); err != nil {
			return err
		}
		writeStatus(stdout, last, url)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if last.State == workflows.CampaignFailed {
		return fmt.Errorf("campaign %s failed: %s", name, last.Reason)
	}
	return nil
}

// campaignErr names the campaign in a not-found error (exit 3).
func campaignErr(name string, err error) error {
	if isNotFound(err) {
		return withCode(ExitNotFound, fmt.Errorf("campaign %q: %w", name, client.ErrNotFound))
	}
	return err
}

// isNotFound reports whether err says that a workflow does not exist.
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.Is(err, client.ErrNotFound) || errors.As(err, &nf)
}

// statusJSON is `status --json`: the CampaignStatus and the UI link.
type statusJSON struct {
	workflows.CampaignStatus
	UIURL string `json:"ui_url,omitempty"`
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeStatus(w io.Writer, s workflows.CampaignStatus, url string) {
	fmt.Fprintf(w, "campaign  %s\n", s.Campaign)
	fmt.Fprintf(w, "state     %s\n", s.State)
	if s.Reason != "" {
		fmt.Fprintf(w, "reason    %s\n", s.Reason)
	}
	fmt.Fprintf(w, "trials    %d/%d ended (%d completed, %d stopped, %d failed), %d running, %d pending, %d created\n",
		s.Ended(), s.MaxTrials, s.Completed, s.Stopped, s.Failed, s.Running, s.Pending, s.Created)
	fmt.Fprintf(w, "limits    %d at once, ends after %d failures\n", s.MaxConcurrent, s.MaxFailures)
	if b := s.Best; b != nil {
		fmt.Fprintf(w, "best      %s %s %.6g by %s (%s, %s samples): %s\n",
			s.Objective, s.Mode, b.Score, b.TrialID, b.State, formatCount(b.Samples), formatParams(b.Params))
	} else {
		fmt.Fprintf(w, "best      none yet (%s %s)\n", s.Mode, s.Objective)
	}
	fmt.Fprintf(w, "progress  %.0f%%\n", 100*s.Progress)
	if url != "" {
		fmt.Fprintf(w, "ui        %s\n", url)
	}
}

// followProgress renders c.Watch as a progress bar until the campaign ends
// and returns its last status. On a terminal the bar is redrawn in place;
// elsewhere a plain line is written whenever it changes.
func followProgress(ctx context.Context, c *client.Client, name string, every time.Duration, w io.Writer) (workflows.CampaignStatus, error) {
	tty := isTerminal(w)
	var last workflows.CampaignStatus
	var lastLine string
	seen := false
	for p := range c.Watch(ctx, name, every) {
		if p.Err != nil {
			if isNotFound(p.Err) {
				return last, campaignErr(name, p.Err)
			}
			continue // a failed query: the next one may do
		}
		last, seen = p.Status, true
		line := progressLine(p)
		switch {
		case tty:
			fmt.Fprintf(w, "\r%s\x1b[K", line)
		case line != lastLine:
			fmt.Fprintln(w, line)
		}
		lastLine = line
	}
	if tty && seen {
		fmt.Fprintln(w)
	}
	if err := ctx.Err(); err != nil {
		return last, err
	}
	if !seen {
		return last, fmt.Errorf("campaign %s: no status came back", name)
	}
	return last, nil
}

// progressLine is one line: a bar of trials ended out of max_trials, the
// running and pending trials, the pool's nodes in use, the best score.
func progressLine(p client.Progress) string {
	s := p.Status
	const width = 20
	filled := 0
	if s.MaxTrials > 0 {
		filled = min(width, width*s.Ended()/s.MaxTrials)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s%s] %d/%d trials  running %d  pending %d",
		strings.Repeat("#", filled), strings.Repeat("-", width-filled), s.Ended(), s.MaxTrials, s.Running, s.Pending)
	if p.Pool != nil {
		used := 0
		for _, t := range p.Pool.Trials {
			used += len(t.Nodes)
		}
		fmt.Fprintf(&b, "  nodes %d/%d", used, len(p.Pool.Nodes))
	}
	if s.Best != nil {
		fmt.Fprintf(&b, "  best %.6g (%s)", s.Best.Score, s.Best.TrialID)
	}
	if s.Failed > 0 {
		fmt.Fprintf(&b, "  failed %d", s.Failed)
	}
	fmt.Fprintf(&b, "  %s", s.State)
	return b.String()
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
