package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// paretoStatus is a campaign of two objectives and a constraint.
func paretoStatus() workflows.CampaignStatus {
	s := sampleStatus()
	s.Best = nil
	s.Objective, s.Mode = "loss", "min"
	memMax := 3.5
	s.Objectives = []hpo.Objective{{Metric: "loss", Mode: "min"}, {Metric: "acc", Mode: "max"}}
	s.Constraints = []hpo.Constraint{{Metric: "mem", Max: &memMax}}
	front := []workflows.LeaderboardEntry{
		{TrialID: "t00003", Number: 3, Score: 0.25, Latest: 0.25, Values: []float64{0.25, 0.75}, Constraints: map[string]float64{"mem": 2},
			State: workflows.TrialCompleted, Samples: 12345, Rank: 1, Params: hpo.Params{"lr": hpo.Float(0.01)}},
		{TrialID: "t00007", Number: 7, Score: 0.5, Latest: 0.5, Values: []float64{0.5, 0.875}, Constraints: map[string]float64{"mem": 3},
			State: workflows.TrialRunning, Samples: 900, Rank: 1, Params: hpo.Params{"lr": hpo.Float(0.1)}},
	}
	s.Pareto = gleaner.NewParetoFront(s.Objectives, s.Constraints, front, []float64{1, 0.5}, 0)
	return s
}

// status shows a campaign of several objectives' front and hypervolume
// where one objective's best is shown.
func TestWriteStatusPareto(t *testing.T) {
	var b bytes.Buffer
	writeStatus(&b, paretoStatus(), "")
	want := "best      Pareto front of 2 trials (min loss, max acc; mem ≤ 3.5), hypervolume 0.25 at reference point (1, 0.5)\n" +
		"          t00003  loss 0.25 acc 0.75  (completed, 12.3k samples):  lr=0.01\n" +
		"          t00007  loss 0.5 acc 0.875  (running, 900 samples):      lr=0.1\n"
	require.Contains(t, b.String(), want)

	s := paretoStatus()
	s.Pareto = gleaner.NewParetoFront(s.Objectives, s.Constraints, s.Pareto.Trials[:1], nil, 0)
	b.Reset()
	writeStatus(&b, s, "")
	require.Contains(t, b.String(), "best      Pareto front of 1 trial (min loss, max acc; mem ≤ 3.5), hypervolume 1 at reference point (1.25, -0.25) (derived)\n")

	s.Pareto = gleaner.NewParetoFront(s.Objectives, s.Constraints, nil, nil, 0)
	b.Reset()
	writeStatus(&b, s, "")
	require.Contains(t, b.String(), "best      no Pareto front yet (min loss, max acc; mem ≤ 3.5)\n")

	require.Contains(t, progressLine(client.Progress{Status: paretoStatus()}), "  front 2, hypervolume 0.25  running")
}

// leaderboard prints each objective's value, the rank and feasibility.
func TestWriteParetoLeaderboard(t *testing.T) {
	s := paretoStatus()
	l := append(s.Pareto.Trials, workflows.LeaderboardEntry{TrialID: "t00001", Number: 1, Score: 0.4, Values: []float64{0.4, 0.9},
		Constraints: map[string]float64{"mem": 4}, Infeasible: true, State: workflows.TrialCompleted, Samples: 100, Rank: 2})
	var b bytes.Buffer
	writeParetoLeaderboard(&b, l, s.Pareto, s.Objectives, s.Constraints)
	want := `Pareto front of 2 trials (min loss, max acc; mem ≤ 3.5), hypervolume 0.25 at reference point (1, 0.5)
RANK  TRIAL   LOSS (min)  ACC (max)  FEASIBLE  STATE      SAMPLES  RESTARTS  PARAMS
1     t00003  0.25        0.75       yes       completed  12.3k    0         lr=0.01
1     t00007  0.5         0.875      yes       running    900      0         lr=0.1
2     t00001  0.4         0.9        no        completed  100      0         
`
	require.Equal(t, want, b.String())
}

// A campaign of one objective's JSON has none of the fields of several.
func TestStatusJSONOneObjectiveUnchanged(t *testing.T) {
	b, err := json.Marshal(sampleStatus())
	require.NoError(t, err)
	for _, field := range []string{"objectives", "constraints", "pareto", "values", "infeasible", `"rank"`} {
		require.False(t, strings.Contains(string(b), field), "%s in %s", field, b)
	}
	b, err = json.Marshal(paretoStatus())
	require.NoError(t, err)
	for _, field := range []string{`"objectives":[{"metric":"loss","mode":"min"},{"metric":"acc","mode":"max"}]`,
		`"pareto":{"trials":[{"trial_id":"t00003"`, `"values":[0.25,0.75],"constraints":{"mem":2},"rank":1}`,
		`"size":2,"hypervolume":0.25,"reference_point":[1,0.5]}`} {
		require.Contains(t, string(b), field)
	}
}

// `gleaner dev` and `submit --wait` print a campaign of several
// objectives' end as leaderboard does: the front, its hypervolume and
// the trials by rank, a column per objective; never one SCORE.
func TestEndedCampaignPrintsTheFront(t *testing.T) {
	s := paretoStatus()
	memMax := 3.5
	spec := gleaner.CampaignSpec{Objectives: []gleaner.ObjectiveSpec{{Metric: "loss", Mode: "min"}, {Metric: "acc", Mode: "max"}},
		Constraints: []hpo.Constraint{{Metric: "mem", Max: &memMax}}}
	res := workflows.CampaignResult{Campaign: "c", State: workflows.CampaignCompleted, Pareto: s.Pareto, Leaderboard: s.Pareto.Trials}
	res.Completed = 2
	var table bytes.Buffer
	writeParetoLeaderboard(&table, res.Leaderboard, s.Pareto, s.Objectives, s.Constraints)
	require.Contains(t, table.String(), "LOSS (min)  ACC (max)  FEASIBLE")

	var b bytes.Buffer
	writeResult(&b, client.Campaign{Name: "c"}, res, spec)
	require.Equal(t, "campaign c completed: 2 completed, 0 stopped, 0 failed\n"+table.String(), b.String())
	require.NotContains(t, b.String(), "SCORE")

	b.Reset()
	devWriteLeaderboard(&b, res, spec)
	require.Equal(t, "\nleaderboard (top 2, by non-dominated rank):\n"+table.String(), b.String())

	b.Reset()
	res.Leaderboard, res.Pareto = nil, gleaner.NewParetoFront(s.Objectives, s.Constraints, nil, nil, 0)
	devWriteLeaderboard(&b, res, spec)
	require.Equal(t, "leaderboard: empty (no trial reported every objective: min loss, max acc; mem ≤ 3.5)\n", b.String())
}

// dev's progress line says the front and its hypervolume.
func TestDevProgressLineFront(t *testing.T) {
	require.Contains(t, devProgressLine(0, client.Progress{Status: paretoStatus()}, 4), "| best front 2, hypervolume 0.25")
}
