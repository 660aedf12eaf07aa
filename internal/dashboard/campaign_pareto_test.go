package dashboard

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// paretoReader is a campaign of two objectives (min loss, min cost) and
// a constraint (mem ≤ 4): t1 and t2 on the front, t3 dominated, t4
// infeasible, t5 without cost yet.
type paretoReader struct {
	mu     sync.Mutex
	trials []gleaner.TrialStatus
}

func (f *paretoReader) Read(context.Context) (client.TrialList, client.FollowStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	memMax := 4.0
	spec := gleaner.CampaignSpec{Name: "mo", Objectives: []gleaner.ObjectiveSpec{{Metric: "loss", Mode: "min"}, {Metric: "cost", Mode: "min"}},
		Constraints: []hpo.Constraint{{Metric: "mem", Max: &memMax}}, ReferencePoint: []float64{1, 10},
		Space: hpo.Space{{Name: "lr", Type: hpo.ParamFloat, Min: 0, Max: 1}}}
	objs := spec.ObjectiveList()
	var front []gleaner.LeaderboardEntry
	for _, t := range f.trials[:2] {
		front = append(front, gleaner.LeaderboardEntry{TrialID: t.TrialID, Number: trialNumber(t.TrialID), Values: []float64{t.Metrics["loss"], t.Metrics["cost"]},
			Constraints: map[string]float64{"mem": t.Metrics["mem"]}, State: t.State, Rank: 1})
	}
	st := gleaner.CampaignStatus{Campaign: "mo", State: gleaner.CampaignRunning, Objective: "loss", Mode: "min", Objectives: objs,
		Constraints: spec.Constraints, Pareto: gleaner.NewParetoFront(objs, spec.Constraints, front, spec.ReferencePoint, 0)}
	return client.TrialList{Trials: slices.Clone(f.trials), Spec: spec, Status: &st}, client.FollowStats{Queries: 1}, nil
}

func moTrial(id string, metrics map[string]float64) gleaner.TrialStatus {
	return gleaner.TrialStatus{TrialID: id, Params: hpo.Params{"lr": hpo.Float(0.1)},
		TrialProgress: gleaner.TrialProgress{State: gleaner.TrialCompleted, Metrics: metrics,
			History: []gleaner.MetricPoint{{Samples: 1, Value: metrics["loss"]}}}}
}

// The page of a campaign of two objectives carries its objectives, its
// constraints, each trial's values and feasibility, and the status's
// Pareto front with its hypervolume and reference point; the panels that
// follow one objective follow the first.
func TestCampaignPageOfTwoObjectives(t *testing.T) {
	r := &paretoReader{trials: []gleaner.TrialStatus{
		moTrial("t00001", map[string]float64{"loss": 0.2, "cost": 8, "mem": 3}),
		moTrial("t00002", map[string]float64{"loss": 0.5, "cost": 2, "mem": 1}),
		moTrial("t00003", map[string]float64{"loss": 0.6, "cost": 9, "mem": 2}),
		moTrial("t00004", map[string]float64{"loss": 0.1, "cost": 1, "mem": 9}),
		moTrial("t00005", map[string]float64{"loss": 0.3}),
	}}
	clk := &clock{now: time.Unix(1_000_000, 0)}
	s := New(nil, Options{Now: clk.Now, Refresh: time.Second, FollowTrials: func(string) TrialReader { return r }})
	w := httptest.NewRecorder()
	s.ServeHTTP(w, local(http.MethodGet, "/api/campaigns/mo?since=0"))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := w.Body.String()
	for _, want := range []string{
		`"objective":"loss","mode":"min","objectives":[{"metric":"loss","mode":"min"},{"metric":"cost","mode":"min"}],"constraints":[{"metric":"mem","max":4}],"reference_point":[1,10]`,
		`"vs":[[0.2,8],[0.5,2],[0.6,9],[0.1,1],null],"inf":{"3":true}`,
		`"pareto":{"trials":[{"trial_id":"t00001"`,
		`"size":2,"hypervolume":`,
	} {
		require.Contains(t, body, want)
	}
	var p CampaignPage
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
	require.Equal(t, "loss", p.Spec.Objective, "the first objective, not the empty objective.metric")
	require.Equal(t, []float64{1, 10}, p.Status.Pareto.ReferencePoint)
	require.False(t, p.Status.Pareto.ReferenceDerived)
	// (1 − 0.2)·(10 − 8) + (1 − 0.5)·(8 − 2)
	require.InDelta(t, 4.6, p.Status.Pareto.Hypervolume, 1e-9)
	require.Equal(t, 0.2, *p.Rows.Best[0], "history and the other panels follow the first objective")

	// Only what changed comes again, values included.
	r.mu.Lock()
	r.trials[4].Metrics = map[string]float64{"loss": 0.3, "cost": 3, "mem": 1}
	r.mu.Unlock()
	clk.add(2 * time.Second)
	since := fmt.Sprintf("/api/campaigns/mo?since=%d", p.Version)
	getPage(t, s, since) // starts the read behind the answer
	settled(t, s, "mo")
	p2 := getPage(t, s, since)
	require.Equal(t, []string{"t00005"}, p2.Rows.ID)
	require.Equal(t, [][]float64{{0.3, 3}}, p2.Rows.Values)
	require.Empty(t, p2.Rows.Infeasible)

	// The export has a column per objective and feasibility.
	w = httptest.NewRecorder()
	s.ServeHTTP(w, local(http.MethodGet, "/api/campaigns/mo/export?format=csv"))
	recs, err := csv.NewReader(bytes.NewReader(w.Body.Bytes())).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"value_loss", "value_cost", "feasible", "lr"}, recs[0][11:15])
	require.Equal(t, []string{"0.1", "1", "no"}, recs[4][11:14])
}

// A campaign of one objective's page has none of the fields of several.
func TestCampaignPageOfOneObjectiveUnchanged(t *testing.T) {
	s := New(nil, Options{Now: func() time.Time { return time.Unix(1_000_000, 0) }, Refresh: time.Second,
		FollowTrials: func(string) TrialReader { return &fakeReader{trials: trialsN(2)} }})
	w := httptest.NewRecorder()
	s.ServeHTTP(w, local(http.MethodGet, "/api/campaigns/c?since=0"))
	for _, field := range []string{`"objectives"`, `"constraints"`, `"reference_point"`, `"vs"`, `"inf"`, `"pareto"`} {
		require.NotContains(t, w.Body.String(), field)
	}
}
