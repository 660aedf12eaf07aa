package cli

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func TestWriteCampaignList(t *testing.T) {
	now := time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)
	best := 0.0312
	list := []client.CampaignSummary{
		{Name: "spirals", State: workflows.CampaignRunning, TrialsDone: 12, TrialsRunning: 4, MaxTrials: 20,
			Objective: "val_loss", Mode: "min", Best: &best, Started: now.Add(-5 * time.Minute)},
		{Name: "mnist", State: workflows.CampaignFailed, TrialsDone: 2, MaxTrials: 40,
			Objective: "acc", Mode: "max", Started: now.Add(-26 * time.Hour), Closed: now.Add(-25 * time.Hour)},
		{Name: "old", State: "terminated", TrialsDone: 3, Started: now.Add(-90 * time.Minute)},
	}
	var b bytes.Buffer
	writeCampaignList(&b, list, now)
	require.Equal(t, `CAMPAIGN  STATE       TRIALS       IN FLIGHT  BEST                   AGE
spirals   running     12/20 (60%)  4          val_loss 0.0312 (min)  5m
mnist     failed      2/40 (5%)    0          -                      1d2h
old       terminated  3            0          -                      1h30m
`, b.String())
}

// A campaign of several objectives shows its front's hypervolume, never
// its first objective as a best.
func TestWriteCampaignListSeveralObjectives(t *testing.T) {
	now := time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)
	hv := 0.625
	list := []client.CampaignSummary{
		{Name: "nas", State: workflows.CampaignRunning, TrialsDone: 8, MaxTrials: 20, Objective: "acc", Mode: "max",
			Objectives: 2, Hypervolume: &hv, Started: now.Add(-time.Minute)},
		{Name: "fresh", State: workflows.CampaignRunning, MaxTrials: 20, Objective: "loss", Mode: "min",
			Objectives: 3, Started: now.Add(-time.Minute)},
	}
	var b bytes.Buffer
	writeCampaignList(&b, list, now)
	require.Equal(t, `CAMPAIGN  STATE    TRIALS      IN FLIGHT  BEST                              AGE
nas       running  8/20 (40%)  0          hypervolume 0.625 (2 objectives)  1m
fresh     running  0/20 (0%)   0          - (3 objectives)                  1m
`, b.String())
}

func TestFormatAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 45 * time.Second: "45s", 12 * time.Minute: "12m", 2 * time.Hour: "2h",
		3*time.Hour + 20*time.Minute: "3h20m", 48 * time.Hour: "2d", 5*24*time.Hour + 4*time.Hour: "5d4h",
	} {
		require.Equal(t, want, formatAge(d), "%v", d)
	}
}

func TestListRejectsANegativeLimit(t *testing.T) {
	_, errOut, code := cliRun(t, "list", "--limit", "-1", "--address", "127.0.0.1:1")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--limit: -1 must not be negative")
}

// A namespace without Gleaner's search attributes: the query fails, and
// the message says how to register them.
func TestListWithoutSearchAttributesSaysSetup(t *testing.T) {
	tc := &mocks.Client{}
	tc.On("ListWorkflow", mock.Anything, mock.Anything).Return(nil,
		serviceerror.NewInvalidArgument(`invalid query: unable to convert filter expression: invalid search attribute: GleanerKind`))
	tc.On("Close").Return()
	o := &listOptions{}
	o.conn.getenv = mapEnv(nil)
	f := pflag.NewFlagSet("list", pflag.ContinueOnError)
	o.conn.addFlags(f)
	require.NoError(t, f.Parse([]string{"--address", "temporal.example.org:7233", "--ui", "-"}))
	o.conn.dial = func(context.Context, client.Connection) (tclient.Client, error) { return tc, nil }
	var out, errb bytes.Buffer
	err := o.run(context.Background(), f, &out, &errb)
	require.ErrorContains(t, err, "invalid search attribute: GleanerKind\n"+
		"  the namespace lacks Gleaner's search attributes: register them with gleaner setup --address temporal.example.org:7233")
	require.Equal(t, ExitFailure, ExitCode(err))
}
