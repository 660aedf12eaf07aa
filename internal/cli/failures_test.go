package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/workflows"
)

const failedReason = "trial t00002: trainer exited with exit code 3 (log: /data/c/t00002/runs/1/trainer.log); trial.max_restarts: 1 reached\n" +
	"| Traceback (most recent call last):\n| ValueError: lr out of range"

func failedTrial(id string) workflows.TrialStatus {
	return workflows.TrialStatus{TrialID: id, Params: hpo.Params{"lr": hpo.Float(0.123456)},
		TrialProgress: workflows.TrialProgress{State: workflows.TrialFailed, Error: strings.ReplaceAll(failedReason, "t00002", id)}}
}

// fakeFailures answers FailedTrials.
type fakeFailures struct {
	trials []workflows.TrialStatus
	err    error
}

func (f fakeFailures) FailedTrials(_ context.Context, _ string, limit int) ([]workflows.TrialStatus, error) {
	return f.trials[:min(limit, len(f.trials))], f.err
}

func TestWriteFailures(t *testing.T) {
	s := workflows.CampaignStatus{State: workflows.CampaignFailed}
	s.Failed = 5
	var b bytes.Buffer
	five := fakeFailures{trials: []workflows.TrialStatus{failedTrial("t00009"), failedTrial("t00007"), failedTrial("t00005"), failedTrial("t00002"), failedTrial("t00001")}}
	writeFailures(context.Background(), &b, five, "c", "", s)
	require.Equal(t, "failed    t00009 (lr=0.1235): trainer exited with exit code 3 (log: /data/c/t00009/runs/1/trainer.log); trial.max_restarts: 1 reached\n"+
		"            | Traceback (most recent call last):\n"+
		"            | ValueError: lr out of range\n"+
		"          t00007 (lr=0.1235): trainer exited with exit code 3 (log: /data/c/t00007/runs/1/trainer.log); trial.max_restarts: 1 reached\n"+
		"            | Traceback (most recent call last):\n"+
		"            | ValueError: lr out of range\n"+
		"          t00005 (lr=0.1235): trainer exited with exit code 3 (log: /data/c/t00005/runs/1/trainer.log); trial.max_restarts: 1 reached\n"+
		"            | Traceback (most recent call last):\n"+
		"            | ValueError: lr out of range\n"+
		"          … and 2 more: gleaner trials c\n", b.String())

	b.Reset()
	writeFailures(context.Background(), &b, fakeFailures{err: errors.New("server unavailable")}, "c", "", s)
	require.Equal(t, "failed    (its failed trials could not be read: server unavailable)\n", b.String())

	b.Reset()
	s.State = workflows.CampaignCompleted
	writeFailures(context.Background(), &b, five, "c", "", s)
	require.Empty(t, b.String(), "only a failed campaign's")
}

// A failed campaign's error names its trials; a watcher that cannot read
// them gives the reason alone.
func TestCampaignFailed(t *testing.T) {
	s := workflows.CampaignStatus{State: workflows.CampaignFailed, Reason: "budget.max_failures: 2 trials failed (max 2)"}
	s.Failed = 2
	err := campaignFailed(context.Background(), fakeFailures{trials: []workflows.TrialStatus{failedTrial("t00002"), failedTrial("t00001")}}, "c", s)
	require.ErrorIs(t, err, client.ErrCampaignFailed)
	require.Equal(t, ExitFailure, ExitCode(err))
	require.Equal(t, "campaign c failed: budget.max_failures: 2 trials failed (max 2)\n"+
		"  t00002 (lr=0.1235): trainer exited with exit code 3 (log: /data/c/t00002/runs/1/trainer.log); trial.max_restarts: 1 reached\n"+
		"    | Traceback (most recent call last):\n    | ValueError: lr out of range\n"+
		"  t00001 (lr=0.1235): trainer exited with exit code 3 (log: /data/c/t00001/runs/1/trainer.log); trial.max_restarts: 1 reached\n"+
		"    | Traceback (most recent call last):\n    | ValueError: lr out of range", err.Error())
	require.Equal(t, "campaign c failed: budget.max_failures: 2 trials failed (max 2)", campaignFailed(context.Background(), nil, "c", s).Error())
}

func TestWriteTrialFailures(t *testing.T) {
	ok := workflows.TrialStatus{TrialID: "t00001", TrialProgress: workflows.TrialProgress{State: workflows.TrialCompleted}}
	var b bytes.Buffer
	writeTrialFailures(&b, []workflows.TrialStatus{ok, failedTrial("t00002")})
	require.Equal(t, "failed trials, newest first:\n"+
		"  t00002 (lr=0.1235): trainer exited with exit code 3 (log: /data/c/t00002/runs/1/trainer.log); trial.max_restarts: 1 reached\n"+
		"    | Traceback (most recent call last):\n    | ValueError: lr out of range\n", b.String())
	b.Reset()
	writeTrialFailures(&b, []workflows.TrialStatus{ok})
	require.Empty(t, b.String())
}

func TestFailureBrief(t *testing.T) {
	require.Equal(t, "exit code 3", failureBrief(failedReason))
	require.Equal(t, "signal killed after the grace period", failureBrief("trial t1: rank 1: trainer exited with signal killed after the grace period (log: x)"))
	require.Equal(t, "could not start: no such file or directory", failureBrief("could not start: no such file or directory"))
}

// The --wait summary warns about trials that never reported the objective.
func TestWriteResultWarns(t *testing.T) {
	res := workflows.CampaignResult{Campaign: "c", State: workflows.CampaignCompleted, Warnings: []string{missedWarning}}
	res.Completed = 3
	var b bytes.Buffer
	writeResult(&b, client.Campaign{Name: "c"}, res, gleaner.CampaignSpec{})
	require.Equal(t, "campaign c completed: 3 completed, 0 stopped, 0 failed\n  warning   "+missedWarning+"\n", b.String())

	res = workflows.CampaignResult{Campaign: "c", State: workflows.CampaignFailed, Reason: "budget.max_failures: 2 trials failed (max 2)"}
	b.Reset()
	writeResult(&b, client.Campaign{Name: "c"}, res, gleaner.CampaignSpec{})
	require.NotContains(t, b.String(), "reason", "a failure's reason comes with its error")
}
