package cli

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// failureReader reads a campaign's failed trials: a *client.Client.
type failureReader = client.FailedTrialsReader

// campaignFailed is the error of a command that followed campaign name to
// its failure (status s): its reason and, when src can read them, its
// newest failed trials with their exit status, log path and the last
// lines of their logs (client.FailedError).
func campaignFailed(ctx context.Context, src any, name string, s workflows.CampaignStatus) error {
	e := &client.FailedError{Campaign: name, Reason: s.Reason, Failed: s.Failed}
	if r, ok := src.(failureReader); ok && s.Failed > 0 {
		e.Trials, e.TrialsErr = client.WaitFailedTrials(ctx, r, name, min(s.Failed, client.FailuresShown))
	}
	return e
}

// writeFailures prints, under a failed campaign's status, its newest
// failed trials (client.DescribeFailure); nothing for another state. A
// read that fails is said in one line: the status stands.
func writeFailures(ctx context.Context, w io.Writer, r failureReader, name, conn string, s workflows.CampaignStatus) {
	if s.State != workflows.CampaignFailed || s.Failed == 0 {
		return
	}
	trials, err := client.WaitFailedTrials(ctx, r, name, min(s.Failed, client.FailuresShown))
	if err != nil {
		fmt.Fprintf(w, "failed    (its failed trials could not be read: %v)\n", err)
		return
	}
	for i, t := range trials {
		label := "failed"
		if i > 0 {
			label = ""
		}
		// Under the status's labels: continuation lines 12 in.
		d := strings.ReplaceAll(strings.TrimPrefix(client.DescribeFailure(t), "  "), "\n    ", "\n            ")
		fmt.Fprintf(w, "%-9s %s\n", label, d)
	}
	if more := s.Failed - len(trials); more > 0 && len(trials) > 0 {
		fmt.Fprintf(w, "          … and %d more: %s\n", more, commandHint(conn, "trials", name))
	}
}

// trialFailuresShown bounds the reasons `trials` prints under its table.
const trialFailuresShown = 20

// writeTrialFailures prints, under the trials table, the reason of each
// failed trial listed, whole (client.DescribeFailure: exit status, log
// path, the log's last lines), newest first, at most trialFailuresShown.
func writeTrialFailures(w io.Writer, trials []workflows.TrialStatus) {
	var failed []workflows.TrialStatus
	for i := len(trials) - 1; i >= 0; i-- {
		if trials[i].State == workflows.TrialFailed {
			failed = append(failed, trials[i])
		}
	}
	if len(failed) == 0 {
		return
	}
	fmt.Fprintln(w, "failed trials, newest first:")
	for i, t := range failed {
		if i == trialFailuresShown {
			fmt.Fprintf(w, "  … and %d more (--json has every trial's error)\n", len(failed)-i)
			break
		}
		fmt.Fprintln(w, client.DescribeFailure(t))
	}
}

// exitedWith finds a trainer's exit status in the worker's failure
// message ("… trainer exited with exit code 3 (log: …)").
var exitedWith = regexp.MustCompile(`trainer exited with (.+?) \(log: `)

// failureBrief is a failed trial's reason in a few words for a table
// cell: its trainer's exit status, else its reason's first line, cut.
func failureBrief(reason string) string {
	if m := exitedWith.FindStringSubmatch(reason); m != nil {
		return m[1]
	}
	return firstLine(reason, 60) // whole under the table
}
