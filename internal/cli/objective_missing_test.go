package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// jsonValue is a query result as the server hands it back.
type jsonValue struct{ v any }

func (j jsonValue) HasValue() bool { return true }
func (j jsonValue) Get(out any) error {
	b, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

const missedWarning = `3 of 3 finished trials never reported objective metric "valloss" (t00001, t00002, t00003); ` +
	`they reported: loss, val_loss (did you mean "val_loss"?)`

// missedStatus is a campaign whose trials all finished without the objective.
func missedStatus() workflows.CampaignStatus {
	s := sampleStatus()
	s.Objective, s.Best, s.Running, s.Pending = "valloss", nil, 0, 0
	s.CampaignCounts = workflows.CampaignCounts{Created: 3, Completed: 3, ObjectiveMissing: 3}
	s.Warnings = []string{missedWarning}
	return s
}

// fakeCampaign answers the leaderboard and status queries of campaign c.
func fakeCampaign(lb []workflows.LeaderboardEntry, s workflows.CampaignStatus) *mocks.Client {
	tc := &mocks.Client{}
	id := workflows.CampaignWorkflowID("c")
	tc.On("QueryWorkflow", mock.Anything, id, "", workflows.QueryLeaderboard).Return(jsonValue{lb}, nil)
	tc.On("QueryWorkflow", mock.Anything, id, "", workflows.QueryStatus).Return(jsonValue{s}, nil)
	tc.On("Close").Return()
	return tc
}

func runLeaderboard(t *testing.T, tc tclient.Client, args ...string) (stdout, stderr string) {
	t.Helper()
	o := &leaderboardOptions{}
	o.conn.getenv = mapEnv(nil)
	f := pflag.NewFlagSet("leaderboard", pflag.ContinueOnError)
	f.BoolVar(&o.json, "json", false, "")
	o.conn.addFlags(f)
	require.NoError(t, f.Parse(args))
	o.conn.dial = func(context.Context, client.Connection) (tclient.Client, error) { return tc, nil }
	var out, errb bytes.Buffer
	require.NoError(t, o.run(context.Background(), f, "c", &out, &errb))
	return out.String(), errb.String()
}

func TestLeaderboardEmptySaysWhy(t *testing.T) {
	tc := fakeCampaign(nil, missedStatus())
	out, _ := runLeaderboard(t, tc)
	require.Equal(t, "campaign c: no trial has reported objective metric \"valloss\" yet (3 of 10 trials ended, 0 running)\n"+
		"warning: "+missedWarning+"\n", out)

	out, errOut := runLeaderboard(t, tc, "--json")
	require.JSONEq(t, "[]", out, "stdout stays a JSON array")
	require.Equal(t, "warning: "+missedWarning+"\n", errOut)

	// Nothing wrong, just early: no warning.
	s := missedStatus()
	s.Warnings, s.CampaignCounts = nil, workflows.CampaignCounts{Created: 3}
	out, _ = runLeaderboard(t, fakeCampaign(nil, s))
	require.Equal(t, "campaign c: no trial has reported objective metric \"valloss\" yet (0 of 10 trials ended, 0 running)\n", out)
}

// A full leaderboard needs no status.
func TestLeaderboardNotEmptyAsksNoStatus(t *testing.T) {
	tc := fakeCampaign([]workflows.LeaderboardEntry{{TrialID: "t00001", Score: 0.5, State: workflows.TrialCompleted}}, missedStatus())
	out, errOut := runLeaderboard(t, tc)
	require.Contains(t, out, "t00001")
	require.NotContains(t, out+errOut, "warning")
	tc.AssertNotCalled(t, "QueryWorkflow", mock.Anything, mock.Anything, mock.Anything, workflows.QueryStatus)
}

func TestWriteEmptyLeaderboardWithoutStatus(t *testing.T) {
	var b bytes.Buffer
	writeEmptyLeaderboard(&b, "c", nil)
	require.Equal(t, "campaign c: no trial has reported the objective yet\n", b.String())
}

func TestWriteStatusWarns(t *testing.T) {
	var b bytes.Buffer
	writeStatus(&b, missedStatus(), "")
	require.Contains(t, b.String(), "best      none yet (min valloss)\nwarning   "+missedWarning+"\n")

	var j bytes.Buffer
	require.NoError(t, writeJSON(&j, statusJSON{missedStatus(), ""}))
	var got struct {
		Warnings         []string `json:"warnings"`
		ObjectiveMissing int      `json:"objective_missing"`
	}
	require.NoError(t, json.Unmarshal(j.Bytes(), &got))
	require.Equal(t, []string{missedWarning}, got.Warnings)
	require.Equal(t, 3, got.ObjectiveMissing)

	j.Reset()
	require.NoError(t, writeJSON(&j, statusJSON{sampleStatus(), ""}))
	require.NotContains(t, j.String(), "warnings")
}

func TestProgressLineCountsMissedObjective(t *testing.T) {
	s := missedStatus()
	line := progressLine(client.Progress{Status: s})
	require.True(t, strings.HasSuffix(line, "  no valloss 3  running"), line)
}

func TestTrialsMarkMissedObjective(t *testing.T) {
	done := workflows.TrialProgress{State: workflows.TrialCompleted, Metrics: map[string]float64{"val_loss": 0.5}}
	scored := done
	scored.ObjectiveSeen = true
	trials := []workflows.TrialStatus{
		{TrialID: "t00001", TrialProgress: done},
		{TrialID: "t00002", TrialProgress: scored},
		{TrialID: "t00003", TrialProgress: workflows.TrialProgress{State: workflows.TrialStopped}},
		{TrialID: "t00004", TrialProgress: workflows.TrialProgress{State: workflows.TrialRunning}},
		{TrialID: "t00005", TrialProgress: workflows.TrialProgress{State: workflows.TrialCompleted}},
	}
	var b bytes.Buffer
	writeTrials(&b, trials, "valloss")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 6)
	require.Contains(t, lines[1], "completed (no valloss reported)")
	require.NotContains(t, lines[2], "no valloss", "it reported the objective")
	require.NotContains(t, lines[3], "no valloss", "stopped before it reported anything")
	require.NotContains(t, lines[4], "no valloss", "still running")
	require.Contains(t, lines[5], "completed (no valloss reported)", "/bin/true")
}

func TestMissedObjective(t *testing.T) {
	for _, c := range []struct {
		p    workflows.TrialProgress
		want bool
	}{
		{workflows.TrialProgress{State: workflows.TrialCompleted}, true},
		{workflows.TrialProgress{State: workflows.TrialCompleted, Metrics: map[string]float64{"loss": 1}}, true},
		{workflows.TrialProgress{State: workflows.TrialStopped, Metrics: map[string]float64{"loss": 1}}, true},
		{workflows.TrialProgress{State: workflows.TrialStopped}, false},
		{workflows.TrialProgress{State: workflows.TrialFailed}, false},
		{workflows.TrialProgress{State: workflows.TrialRunning}, false},
		{workflows.TrialProgress{State: workflows.TrialCompleted, ObjectiveSeen: true}, false},
	} {
		require.Equal(t, c.want, missedObjective(workflows.TrialStatus{TrialProgress: c.p}), "%+v", c.p)
	}
}
