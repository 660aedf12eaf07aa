package searchproto

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// twoObjectives is a search of loss and latency (both min) under the
// constraint mem ≤ 4, by random.
func twoObjectives() Config {
	cfg := testConfig()
	four := 4.0
	cfg.MaxTrials, cfg.MaxConcurrent = 6, 3
	cfg.Objectives = []hpo.Objective{{Metric: "loss", Mode: "min"}, {Metric: "latency", Mode: "min"}}
	cfg.Constraints = []hpo.Constraint{{Metric: "mem", Max: &four}}
	return cfg
}

// recorder is a VectorSearcher that records every result it is given
// and leaves the trials to a random searcher.
type recorder struct {
	hpo.Searcher
	got *[]string
}

func (r recorder) TrialReportedResult(id string, progress float64, res hpo.Result) []hpo.Action {
	*r.got = append(*r.got, fmt.Sprintf("reported %s %v %v", id, res.Values, res.Constraints))
	return r.TrialReported(id, progress, res.Value())
}

func (r recorder) TrialFinishedResult(id string, res hpo.Result, outcome hpo.Outcome) []hpo.Action {
	*r.got = append(*r.got, fmt.Sprintf("finished %s %v %v %s", id, res.Values, res.Constraints, outcome))
	return r.TrialFinished(id, res.Value(), outcome)
}

// vectorSession runs requests through the serve loop with cfg's several
// objectives, the trials a random searcher's (of one objective, so that
// the same seed asks for the same trials), and returns the answers and
// the results the searcher was given.
func vectorSession(t *testing.T, cfg Config, requests ...string) ([]Answer, []string) {
	t.Helper()
	var got []string
	single := cfg.Config
	single.Objectives, single.Constraints = nil, nil
	s, err := hpo.NewSearcher(single)
	require.NoError(t, err)
	ss := newSession(cfg, recorder{s, &got})
	ss.restoreSearcher = func(snapshot []byte) (hpo.Searcher, error) {
		s, err := hpo.RestoreSearcher(single, snapshot)
		return recorder{s, &got}, err
	}
	var out strings.Builder
	require.NoError(t, serve(ss, strings.NewReader(strings.Join(requests, "\n")+"\n"), &out))
	var answers []Answer
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var a Answer
		require.NoError(t, json.Unmarshal([]byte(line), &a), line)
		answers = append(answers, a)
	}
	require.Len(t, answers, len(requests), "one answer per request")
	return answers, got
}

// Every result that is not the search's, through the serve loop: refused
// naming the request and the rule; the searcher does not see it.
func TestServeRefusesResultsNotTheSearchs(t *testing.T) {
	before := []string{initial, created1}
	for _, c := range []struct {
		name, line, want string
	}{
		{"one value for two objectives", `{"event":"finished","id":"t00001","values":[1],"constraints":[2],"outcome":"completed"}`,
			`finished "t00001": values: 1 value for 2 objectives (loss, latency)`},
		{"three values", `{"event":"reported","id":"t00001","samples":1,"values":[1,2,3],"constraints":[2]}`,
			`reported "t00001": values: 3 values for 2 objectives (loss, latency)`},
		{"metric for two objectives", `{"event":"reported","id":"t00001","samples":1,"metric":1,"constraints":[2]}`,
			`reported "t00001": metric: this search has 2 objectives (loss, latency); send values`},
		{"neither", `{"event":"reported","id":"t00001","samples":1,"constraints":[2]}`,
			`reported "t00001": values: missing; one number per objective (null for one a finished trial has none of)`},
		{"constraints missing", `{"event":"reported","id":"t00001","samples":1,"values":[1,2]}`,
			`reported "t00001": constraints: missing; one number per constraint (mem)`},
		{"two constraints for one", `{"event":"reported","id":"t00001","samples":1,"values":[1,2],"constraints":[1,2]}`,
			`reported "t00001": constraints: 2 values for 1 constraint (mem)`},
		{"null in a report", `{"event":"reported","id":"t00001","samples":1,"values":[1,null],"constraints":[2]}`,
			`reported "t00001": values[1]: null; a report carries every value (null is for a trial that finished without one)`},
		{"null constraint in a report", `{"event":"reported","id":"t00001","samples":1,"values":[1,2],"constraints":[null]}`,
			`reported "t00001": constraints[0]: null; a report carries every value (null is for a trial that finished without one)`},
		{"NaN", `{"event":"finished","id":"t00001","values":[1, NaN],"constraints":[2],"outcome":"completed"}`,
			`finished "t00001": values[1]: NaN is not JSON; send null for no value`},
		{"-Infinity constraint", `{"event":"finished","id":"t00001","values":[1,2],"constraints":[-Infinity],"outcome":"completed"}`,
			`finished "t00001": constraints[0]: -Infinity is not JSON; send null for no value`},
		{"past float64", `{"event":"finished","id":"t00001","values":[1e999,2],"constraints":[2],"outcome":"completed"}`,
			`finished "t00001": values[0]: 1e999 is not a finite float64`},
		{"a string", `{"event":"finished","id":"t00001","values":[1,"2"],"constraints":[2],"outcome":"completed"}`,
			`finished "t00001": values[1]: "2" is a string; want a number`},
		{"not a list", `{"event":"finished","id":"t00001","values":1,"constraints":[2],"outcome":"completed"}`,
			`finished "t00001": values: 1 is not a list; want one number per objective`},
		{"null, not a list", `{"event":"finished","id":"t00001","values":null,"constraints":[2],"outcome":"completed"}`,
			`finished "t00001": values: null is not a list; want one number per objective`},
		{"empty", `{"event":"finished","id":"t00001","values":[],"constraints":[2],"outcome":"completed"}`,
			`finished "t00001": values: [] is empty; want one number per objective`},
		{"an object inside", `{"event":"finished","id":"t00001","values":[{},1],"constraints":[2],"outcome":"completed"}`,
			`finished "t00001": values[0]: {} is not a number`},
		{"unknown id", `{"event":"finished","id":"t00009","values":[1,2],"constraints":[2],"outcome":"completed"}`,
			`finished "t00009": no create action named this trial`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, got := vectorSession(t, twoObjectives(), append(append([]string{}, before...), c.line, `{"event":"front"}`)...)
			require.Empty(t, a[0].Error)
			require.Empty(t, a[1].Error)
			require.Equal(t, c.want, a[2].Error)
			require.Empty(t, got, "the searcher saw nothing")
			require.Empty(t, a[3].Front.Trials)
		})
	}
}

// Results reach the searcher whole (hpo.Report, hpo.Finish), NaN for
// null; a front request answers the non-dominated trials, feasible
// first, with their parameters and the hypervolume.
func TestServeFeedsResultsAndAnswersTheFront(t *testing.T) {
	a, got := vectorSession(t, twoObjectives(),
		initial, // t00001..t00003
		created1, `{"event":"created","id":"t00002"}`, `{"event":"created","id":"t00003"}`,
		`{"event":"reported","id":"t00001","samples":10,"values":[3,1],"constraints":[2]}`,
		`{"event":"finished","id":"t00002","values":[1,3],"constraints":[1],"outcome":"completed"}`, // asks for t00004
		`{"event":"finished","id":"t00003","values":[4,4],"constraints":[1],"outcome":"completed"}`, // dominated by both
		`{"event":"created","id":"t00004"}`,
		`{"event":"finished","id":"t00004","values":[0.5,0.5],"constraints":[9],"outcome":"completed"}`, // infeasible
		`{"event":"finished","id":"t00001","values":[2,null],"constraints":[null],"outcome":"stopped"}`,
		`{"event":"front"}`,
	)
	for i, x := range a {
		require.Empty(t, x.Error, "request %d", i+1)
	}
	require.Equal(t, []string{
		"reported t00001 [3 1] [2]",
		"finished t00002 [1 3] [1] completed",
		"finished t00003 [4 4] [1] completed",
		"finished t00004 [0.5 0.5] [9] completed",
		"finished t00001 [2 NaN] [NaN] stopped",
	}, got)
	f := a[len(a)-1].Front
	require.NotNil(t, f)
	var ids []string
	for _, tr := range f.Trials {
		ids = append(ids, tr.ID)
		require.NotEmpty(t, tr.Params, tr.ID)
		require.Nil(t, tr.Metric)
		require.True(t, *tr.Feasible)
	}
	require.Equal(t, []string{"t00002", "t00001"}, ids, "t00001 keeps its report; t00003 is dominated, t00004 infeasible")
	require.Equal(t, []float64{3, 1}, f.Trials[1].Values)
	// Derived: the front's worst of each objective moved out by a tenth of
	// its range, (3.2, 3.2); the front (1,3), (3,1) dominates two strips
	// below it.
	require.True(t, f.ReferenceDerived)
	require.InDeltaSlice(t, []float64{3.2, 3.2}, f.ReferencePoint, 1e-12)
	require.InDelta(t, (3.2-1)*(3.2-3)+(3.2-3)*(3-1), *f.Hypervolume, 1e-12)
}

// The config's reference point measures the front, and the answer does
// not say derived; with no feasible trial the front is the least
// infeasible and its hypervolume 0.
func TestFrontReferencePointAndInfeasible(t *testing.T) {
	cfg := twoObjectives()
	cfg.ReferencePoint = []float64{10, 10}
	a, _ := vectorSession(t, cfg, initial, created1, `{"event":"created","id":"t00002"}`,
		`{"event":"finished","id":"t00001","values":[1,1],"constraints":[6],"outcome":"completed"}`,
		`{"event":"front"}`,
		`{"event":"finished","id":"t00002","values":[2,2],"constraints":[4],"outcome":"completed"}`,
		`{"event":"front"}`,
	)
	f := a[4].Front
	require.Len(t, f.Trials, 1)
	require.False(t, *f.Trials[0].Feasible)
	require.Equal(t, 0.0, *f.Hypervolume)
	require.False(t, f.ReferenceDerived)
	f = a[6].Front
	require.Len(t, f.Trials, 1, "a feasible trial dominates every infeasible one")
	require.Equal(t, "t00002", f.Trials[0].ID)
	require.Equal(t, []float64{10, 10}, f.ReferencePoint)
	require.Equal(t, 64.0, *f.Hypervolume)
}

// A search of one objective answers its best trial: one entry, the first
// to reach the best value, with metric; no hypervolume.
func TestFrontOfOneObjectiveIsTheBest(t *testing.T) {
	a := session(t, testConfig(), initial, created1, `{"event":"front"}`, report1, finish1,
		`{"event":"created","id":"t00002"}`, `{"event":"finished","id":"t00002","metric":0.25,"outcome":"completed"}`,
		`{"event":"front"}`)
	require.Equal(t, &Front{Trials: []FrontTrial{}}, a[2].Front)
	f := a[len(a)-1].Front
	require.Len(t, f.Trials, 1)
	require.Equal(t, "t00001", f.Trials[0].ID, "t00002 only equals it")
	require.Equal(t, 0.25, *f.Trials[0].Metric)
	require.Nil(t, f.Trials[0].Values)
	require.Nil(t, f.Hypervolume)
	require.Nil(t, f.ReferencePoint)
	require.Contains(t, f.Trials[0].Params, "lr")
}

// The front stays within MaxFront, the most crowded dropped: 3,000
// mutually non-dominated results keep MaxFront and both extremes.
func TestFrontBounded(t *testing.T) {
	b := newBest(objectivesOf(twoObjectives().Config), nil)
	const n = 3000
	for i := 0; i < n; i++ {
		x := float64(i) / (n - 1)
		b.offer(fmt.Sprintf("t%05d", i+1), hpo.Result{Values: []float64{x, 1 - x*x}, Constraints: []float64{0}})
	}
	require.Len(t, b.front, MaxFront)
	require.Equal(t, n-MaxFront, b.thinned)
	f := b.answer()
	require.Equal(t, "t00001", f.Trials[0].ID)
	require.Equal(t, fmt.Sprintf("t%05d", n), f.Trials[len(f.Trials)-1].ID)
	require.Equal(t, n-MaxFront, f.Thinned)
}

// Paused trials' parameters stay for a continue, at most MaxPaused.
func TestPausedParamsBounded(t *testing.T) {
	b := newBest(objectivesOf(testConfig().Config), nil)
	for i := 1; i <= MaxPaused+5; i++ {
		id := fmt.Sprintf("t%05d", i)
		b.asked([]Action{{Create: &hpo.Create{ID: id, Params: hpo.Params{"lr": hpo.Float(float64(i))}, Budget: 10}}})
		b.ended(id, hpo.OutcomeCompleted)
	}
	require.Empty(t, b.inFlight)
	require.Len(t, b.paused, MaxPaused)
	require.Nil(t, b.params("t00005"), "the longest paused went first")
	b.asked([]Action{{Continue: &hpo.Continue{TrialID: "t00006", Budget: 30}}})
	require.Equal(t, hpo.Params{"lr": hpo.Float(6)}, b.inFlight["t00006"].Params)
	require.Len(t, b.paused, MaxPaused-1)
	b.offer("t00006", hpo.Scalar(1))
	require.Equal(t, hpo.Params{"lr": hpo.Float(6)}, b.answer().Trials[0].Params)
}

// A snapshot carries the front and the parameters of the trials in
// flight: restored, the session answers the same front, takes the same
// results, and snapshots byte-identically.
func TestSnapshotCarriesTheFront(t *testing.T) {
	cfg := twoObjectives()
	a, _ := vectorSession(t, cfg, initial, created1,
		`{"event":"finished","id":"t00001","values":[1,2],"constraints":[0],"outcome":"completed"}`,
		`{"event":"snapshot"}`, `{"event":"front"}`,
		`{"event":"created","id":"t00002"}`,
		`{"event":"finished","id":"t00002","values":[2,1],"constraints":[0],"outcome":"completed"}`,
		`{"event":"front"}`)
	snap := a[3].Snapshot
	require.Contains(t, string(snap), `"front":{"trials":[{"id":"t00001","params":`)
	require.Contains(t, string(snap), `"in_flight":{"t00002":{"params":`)
	restore, err := json.Marshal(Request{Event: EventRestore, Snapshot: snap})
	require.NoError(t, err)
	b, _ := vectorSession(t, cfg, string(restore), `{"event":"snapshot"}`, `{"event":"front"}`,
		`{"event":"created","id":"t00002"}`,
		`{"event":"finished","id":"t00002","values":[2,1],"constraints":[0],"outcome":"completed"}`,
		`{"event":"front"}`)
	require.JSONEq(t, string(snap), string(b[1].Snapshot))
	require.Equal(t, a[4].Front, b[2].Front)
	require.Equal(t, a[7].Front, b[5].Front)
	require.Len(t, b[5].Front.Trials, 2)
	require.NotEmpty(t, b[5].Front.Trials[1].Params, "t00002's parameters came back with the snapshot")

	// A front of another search's results is refused.
	one, err := json.Marshal(Request{Event: EventRestore, Snapshot: snap})
	require.NoError(t, err)
	c := session(t, testConfig(), string(one))
	require.Contains(t, c[0].Error, "restore: snapshot: ")
}

// A snapshot from before sessions kept their front restores with an
// empty one.
func TestRestoreSnapshotWithoutFront(t *testing.T) {
	a := session(t, testConfig(), initial, created1, finish1, `{"event":"snapshot"}`)
	var snap map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(a[3].Snapshot, &snap))
	delete(snap, "front")
	old, err := json.Marshal(snap)
	require.NoError(t, err)
	restore, err := json.Marshal(Request{Event: EventRestore, Snapshot: old})
	require.NoError(t, err)
	b := session(t, testConfig(), string(restore), `{"event":"front"}`, `{"event":"created","id":"t00002"}`,
		`{"event":"finished","id":"t00002","metric":0.5,"outcome":"completed"}`, `{"event":"front"}`)
	require.Empty(t, b[0].Error)
	require.Empty(t, b[1].Front.Trials)
	require.Equal(t, "t00002", b[4].Front.Trials[0].ID)
	require.Nil(t, b[4].Front.Trials[0].Params, "asked before the snapshot, which kept no parameters")
}

func TestConfigReferencePoint(t *testing.T) {
	for _, c := range []struct {
		cfg  func() Config
		ref  []float64
		want string
	}{
		{testConfig, []float64{1}, "reference_point: a hypervolume needs several objectives or a constraint; one objective has a best value"},
		{twoObjectives, []float64{1}, "reference_point: 1 value for 2 objectives: give one per objective, in its own units"},
		{twoObjectives, []float64{1, math.Inf(1)}, "reference_point[1]: +Inf is not a finite number"},
	} {
		cfg := c.cfg()
		cfg.ReferencePoint = c.ref
		err := cfg.Validate()
		require.EqualError(t, err, c.want)
	}
}

// The front's dominance is hpo.Goals.Dominates, on values computed once:
// checked against it on seeded random results, with ties, both modes and
// infeasible ones.
func TestFrontDominatesAsHPO(t *testing.T) {
	cfg := twoObjectives()
	cfg.Objectives[1].Mode = "max"
	b := newBest(objectivesOf(cfg.Config), nil)
	g := b.objs.goals
	r := rand.New(rand.NewPCG(3, 4))
	pick := func() hpo.Result {
		return hpo.Result{Values: []float64{float64(r.IntN(3)), float64(r.IntN(3))}, Constraints: []float64{float64(2 + r.IntN(5))}}
	}
	for i := 0; i < 5000; i++ {
		x, y := pick(), pick()
		require.Equal(t, g.Dominates(x, y), dominates(b.entry("a", nil, x), b.entry("b", nil, y)), "%v %v", x, y)
	}
}
