package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc/codes"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

type statusOptions struct {
	conn     connectOptions
	watch    bool
	json     bool
	interval time.Duration

	now   func() time.Time                                // time.Now unless a test sets it
	reach func(ctx context.Context, address string) error // dialTCP unless a test sets it
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
time the progress changes instead. While the server does not answer it
says so on stderr and retries, backing off up to 10s between tries, until
it answers again; no such campaign exits 3, and an error retrying cannot
mend (permission denied, …) exits 1. --watch exits 1 if the campaign failed.

Trials that finished without ever reporting the objective metric make a
"warning" line: how many, the metrics they reported instead and, when one
is close, the name objective.metric probably meant.

--json prints the status as one JSON object (with --watch, one per line),
warnings under "warnings".`,
		Example: `  gleaner status go-mlp-spirals
  gleaner status go-mlp-spirals --watch
  gleaner status go-mlp-spirals --json | jq .best.score`,
		Args: exactArgs(1, "one CAMPAIGN name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context()) // interrupt.go
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
	o.conn.links = true
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
		writeFailures(ctx, stdout, c, name, hintFlags(flags, true), s) // failures.go
		return nil
	}

	return followInterrupted(ctx, o.follow(ctx, c, name, url, stdout, stderr), name, flags) // interrupt.go
}

// follow is --watch: the progress (or JSON) from src until the campaign
// ends, its trouble reaching the server on stderr.
func (o *statusOptions) follow(ctx context.Context, src campaignWatcher, name, url string, stdout, stderr io.Writer) error {
	trouble := newWatchTrouble(stderr, o.conn.resolved.HostPort, o.now, o.reach)
	var last workflows.CampaignStatus
	if o.json {
		enc := json.NewEncoder(stdout)
		for p := range src.Watch(ctx, name, o.interval) {
			if p.Err != nil {
				if err := trouble.failed(ctx, name, p.Err); err != nil {
					return err
				}
				continue
			}
			trouble.answered()
			last = p.Status
			if err := enc.Encode(statusJSON{p.Status, url}); err != nil {
				return err
			}
		}
	} else {
		var err error
		if last, err = followProgress(ctx, src, name, o.interval, stdout, trouble); err != nil {
			return err
		}
		writeStatus(stdout, last, url)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if last.State == workflows.CampaignFailed {
		return campaignFailed(ctx, src, name, last) // failures.go
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
	if !s.AsOf.IsZero() {
		fmt.Fprintf(w, "as of     %s (the campaign is busy: its snapshot, at most %v old)\n",
			s.AsOf.UTC().Format(time.TimeOnly), workflows.InlineCountsEvery)
	}
	if s.Reason != "" {
		fmt.Fprintf(w, "reason    %s\n", s.Reason)
	}
	fmt.Fprintf(w, "trials    %d/%d ended (%d completed, %d stopped, %d failed), %s, %d created\n",
		s.Ended(), s.MaxTrials, s.Completed, s.Stopped, s.Failed, strings.Join(s.Census(), ", "), s.Created)
	if s.Continued > 0 {
		fmt.Fprintf(w, "budgets   %d segments continued; a parked trial holds no nodes until its searcher continues it\n", s.Continued)
	}
	fmt.Fprintf(w, "limits    %d at once, ends after %d failures\n", s.MaxConcurrent, s.MaxFailures)
	if s.TrialMode != "" {
		fmt.Fprintf(w, "mode      %s\n", trialModeText(s.TrialMode))
	}
	if s.WarmStarted > 0 {
		fmt.Fprintf(w, "warm      the searcher started from %d trials of earlier campaigns (search.warm_start)\n", s.WarmStarted)
	}
	if s.Pareto != nil {
		writeStatusPareto(w, s) // pareto.go
	} else if b := s.Best; b != nil {
		fmt.Fprintf(w, "best      %s %s %.6g by %s (%s, %s samples): %s\n",
			s.Objective, s.Mode, b.Score, b.TrialID, b.State, formatCount(b.Samples), b.Params.Format(4))
	} else {
		fmt.Fprintf(w, "best      none yet (%s %s)\n", s.Mode, s.Objective)
	}
	for _, warning := range s.Warnings {
		fmt.Fprintf(w, "warning   %s\n", warning)
	}
	fmt.Fprintf(w, "progress  %.0f%%\n", 100*s.Progress)
	if url != "" {
		fmt.Fprintf(w, "ui        %s\n", url)
	}
}

// campaignWatcher is where the watch loops get their observations: a
// *client.Client, or a fake in tests.
type campaignWatcher interface {
	Watch(ctx context.Context, name string, every time.Duration) <-chan client.Progress
}

// followProgress renders src.Watch as a progress bar until the campaign
// ends and returns its last status. On a terminal the bar is redrawn in
// place; elsewhere a plain line is written whenever it changes. Failed
// queries go to trouble, which ends the watch on an error retrying cannot
// mend.
func followProgress(ctx context.Context, src campaignWatcher, name string, every time.Duration, w io.Writer, trouble *watchTrouble) (workflows.CampaignStatus, error) {
	tty := isTerminal(w)
	var last workflows.CampaignStatus
	var lastLine string
	seen := false
	for p := range src.Watch(ctx, name, every) {
		if p.Err != nil {
			if err := trouble.failed(ctx, name, p.Err); err != nil {
				return last, err
			}
			continue // the next query may do
		}
		trouble.answered()
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
	fmt.Fprintf(&b, "[%s%s] %d/%d trials  %s",
		strings.Repeat("#", filled), strings.Repeat("-", width-filled), s.Ended(), s.MaxTrials, strings.Join(s.Census(), ", "))
	if p.Pool != nil {
		inUse, total := p.Pool.NodeUse()
		fmt.Fprintf(&b, "  nodes %d/%d in use", inUse, total)
	}
	if s.Best != nil {
		fmt.Fprintf(&b, "  best %.6g (%s)", s.Best.Score, s.Best.TrialID)
	}
	if f := s.Pareto; f != nil && f.Size > 0 {
		fmt.Fprintf(&b, "  front %d, hypervolume %.6g", f.Size, f.Hypervolume)
	}
	if s.Failed > 0 {
		fmt.Fprintf(&b, "  failed %d", s.Failed)
	}
	if s.ObjectiveMissing > 0 {
		fmt.Fprintf(&b, "  no %s %d", s.Objective, s.ObjectiveMissing)
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

// watchTrouble tells a person on stderr, while a watch's queries fail,
// that it is retrying and since when, and that the server answers again
// once it does: the progress line alone would go stale without a word.
type watchTrouble struct {
	w       io.Writer
	tty     bool   // w is a terminal: redraw the message in place
	address string // the server, as the connection names it
	now     func() time.Time
	// reach tells whether the server's port takes connections: a query
	// to a server that is down fails as a timeout (the SDK retries until
	// its own deadline), just as one no worker answers does.
	reach func(ctx context.Context, address string) error

	since   time.Time // the first failure of this run of them; zero when answering
	retries int
	down    bool // the latest failure: the server was unreachable
	lost    bool // some failure of this run: the server was unreachable
}

// newWatchTrouble reports on w about the server at address; now and
// reach may be nil (time.Now, dialTCP).
func newWatchTrouble(w io.Writer, address string, now func() time.Time, reach func(context.Context, string) error) *watchTrouble {
	if now == nil {
		now = time.Now
	}
	if reach == nil {
		reach = dialTCP
	}
	return &watchTrouble{w: w, tty: isTerminal(w), address: address, now: now, reach: reach}
}

// reachTimeout bounds the check that the server takes connections.
const reachTimeout = time.Second

// dialTCP connects to address and hangs up.
func dialTCP(ctx context.Context, address string) error {
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", address)
	if err != nil {
		return err
	}
	return conn.Close()
}

// failed takes a failed query of campaign name. Errors that retrying
// cannot mend end the watch: they are returned, no such campaign with
// exit code 3, the others (permission denied, no such namespace, …) 1.
// Any other error is said, and failed returns nil: the watch goes on.
func (t *watchTrouble) failed(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return nil // interrupted: the watch ends without a word
	}
	if isNotFound(err) {
		return campaignErr(name, err)
	}
	if !retryable(err) {
		return fmt.Errorf("watching campaign %s: %w", name, err)
	}
	if t.since.IsZero() {
		t.since = t.now()
	}
	t.retries++
	t.down = unreachable(err) || (t.address != "" && t.reach(ctx, t.address) != nil)
	t.lost = t.lost || t.down
	var msg string
	if t.down {
		msg = fmt.Sprintf("reconnecting to %s (server unavailable since %s, retry %d)…",
			t.server(), t.since.Format("15:04:05"), t.retries)
	} else {
		msg = fmt.Sprintf("retrying campaign %s on %s (no status since %s, retry %d: %s)…",
			name, t.server(), t.since.Format("15:04:05"), t.retries, firstLine(err.Error(), 200))
	}
	if t.tty {
		fmt.Fprintf(t.w, "\r\x1b[K%s", msg)
	} else {
		fmt.Fprintln(t.w, msg)
	}
	return nil
}

// answered takes a query that succeeded: after failures, it says so.
func (t *watchTrouble) answered() {
	if t.since.IsZero() {
		return
	}
	after := t.now().Sub(t.since).Round(time.Second)
	msg := fmt.Sprintf("reconnected to %s after %s", t.server(), after)
	if !t.lost {
		msg = fmt.Sprintf("status again from %s after %s", t.server(), after)
	}
	if t.tty {
		fmt.Fprintf(t.w, "\r\x1b[K%s\n", msg)
	} else {
		fmt.Fprintln(t.w, msg)
	}
	t.since, t.retries, t.down, t.lost = time.Time{}, 0, false, false
}

// server names the server in messages.
func (t *watchTrouble) server() string {
	if t.address == "" {
		return "the Temporal server"
	}
	return t.address
}

// retryable reports whether a failed query may succeed if tried again:
// not for a missing campaign or namespace, a refused permission or a
// request the server cannot take; yes for the rest (the server down or
// slow, no worker answering, a query the workflow failed, …).
func retryable(err error) bool {
	var qf *serviceerror.QueryFailed
	if errors.As(err, &qf) {
		return true // the workflow's answer; a mended worker may answer
	}
	switch serviceerror.ToStatus(err).Code() {
	case codes.NotFound, codes.PermissionDenied, codes.Unauthenticated, codes.InvalidArgument, codes.Unimplemented:
		return false
	}
	return true
}

// unreachable reports whether err says the server cannot be reached.
func unreachable(err error) bool {
	return serviceerror.ToStatus(err).Code() == codes.Unavailable || errors.Is(err, syscall.ECONNREFUSED)
}

// trialModeText says in words how a campaign runs its trials
// (CampaignStatus.TrialMode).
func trialModeText(mode string) string {
	switch {
	case mode == "workflow":
		return "a workflow per trial"
	case mode == "inline":
		return "inline (each trial an activity of the campaign)"
	case strings.HasPrefix(mode, "inline, pipelined"):
		return "inline, pipelined (" + strings.TrimSpace(strings.TrimPrefix(mode, "inline, pipelined")) +
			": the next trials queued behind each running one on its nodes)"
	}
	return mode
}
