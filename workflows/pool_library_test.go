package workflows_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wf "github.com/gleaner-hpc/gleaner/workflows"
)

func curve(trial, campaign, model string, at time.Time, n int) wf.LearnedCurve {
	c := wf.LearnedCurve{Trial: trial, Campaign: campaign, Model: model, Batch: 32, NodeType: "gpu", At: at}
	for k := 1; k <= n; k++ {
		c.Points = append(c.Points, wf.CurvePoint{Nodes: k, Throughput: float64(100 * k)})
	}
	return c
}

// The library's bounds: a trial's curve replaces its older one; past
// LibraryPerKey per model, batch and type the least measured (then the
// oldest) goes; past LibraryMaxCurves the oldest of the fullest key, so
// every model keeps a curve; the order is deterministic.
func TestLearnBounds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var lib []wf.LearnedCurve
	for i := range wf.LibraryPerKey + 2 {
		// t0 has 2 counts, t1 3, …: the least measured are the oldest too.
		lib = wf.Learn(lib, curve(fmt.Sprintf("t%d", i), "c", "resnet", t0.Add(time.Duration(i)*time.Minute), i+2))
	}
	require.Len(t, lib, wf.LibraryPerKey)
	for _, c := range lib {
		assert.NotContains(t, []string{"t0", "t1"}, c.Trial, "the least measured went")
	}
	// A newer, less measured curve does not displace more measured ones.
	lib = wf.Learn(lib, curve("late", "c", "resnet", t0.Add(time.Hour), 1))
	require.Len(t, lib, wf.LibraryPerKey)
	for _, c := range lib {
		assert.NotEqual(t, "late", c.Trial)
	}
	// A trial that leaves again replaces its curve.
	lib = wf.Learn(lib, curve("t5", "c", "resnet", t0.Add(2*time.Hour), 8))
	n := 0
	for _, c := range lib {
		if c.Trial == "t5" {
			n++
			assert.Len(t, c.Points, 8)
		}
	}
	require.Equal(t, 1, n)
	// Many models: the total cap holds, and each model keeps a curve.
	for m := range wf.LibraryMaxCurves {
		lib = wf.Learn(lib, curve(fmt.Sprintf("m%d", m), "c", fmt.Sprintf("model-%03d", m), t0, 3))
	}
	require.Len(t, lib, wf.LibraryMaxCurves)
	models := map[string]bool{}
	for _, c := range lib {
		models[c.Model] = true
	}
	require.True(t, models["resnet"], "the fullest key gave way, not a model")
	// Model-less curves are capped per campaign.
	var anon []wf.LearnedCurve
	for i := range wf.LibraryPerKey + 3 {
		anon = wf.Learn(anon, curve(fmt.Sprintf("a%d", i), "c9", "", t0.Add(time.Duration(i)*time.Minute), 3))
	}
	require.Len(t, anon, wf.LibraryPerKey)
	// Order does not depend on arrival.
	a := wf.Learn(nil, curve("x", "c", "m1", t0, 2), curve("y", "c", "m0", t0, 2))
	b := wf.Learn(nil, curve("y", "c", "m0", t0, 2), curve("x", "c", "m1", t0, 2))
	require.Equal(t, a, b)
	// Long curves are thinned to LibraryMaxPoints, ends kept.
	long := wf.LearnedCurves(wf.PoolTrial{Registration: reg("z", 1, 100), Profile: profile("gpu", 100)}, t0)
	require.Len(t, long, 1)
	require.Len(t, long[0].Points, wf.LibraryMaxPoints)
	require.Equal(t, 1, long[0].Points[0].Nodes)
	require.Equal(t, 100, long[0].Points[wf.LibraryMaxPoints-1].Nodes)
}

func profile(typ string, n int) []wf.ProfilePoint {
	var out []wf.ProfilePoint
	for k := 1; k <= n; k++ {
		out = append(out, wf.ProfilePoint{Nodes: k, NodeType: typ, Throughput: float64(10 * k)})
	}
	return out
}

// declining is a model that gets slower beyond one node: the allocator
// gives a trial of it one node once it knows, and more under the n^0.9
// prior.
var declining = []float64{100, 60, 50, 40}

// A trial that leaves the pool leaves its measured curve in the pool's
// library, with the model its trainer named; the library survives
// continue-as-new; a later trial of the same model in another campaign,
// never measured, is allocated by that curve rather than the prior.
func TestPoolLearnsCurvesOfFinishedTrials(t *testing.T) {
	e := newPoolEnv(t, "a")
	e.nodes.set("n1", "n2", "n3", "n4")
	e.at(time.Second, func() {
		r := reg("a", 1, 4)
		r.CampaignID = "c1" // no resources.model: the trainer names it
		e.SignalWorkflow(wf.SignalRegisterTrial, r)
	})
	e.at(2*time.Second, func() {
		for i, x := range declining {
			e.SignalWorkflow(wf.SignalProfile, wf.ThroughputProfile{TrialID: "a", Nodes: i + 1, Throughput: x, Model: "resnet", Batch: 32})
		}
	})
	e.at(3*time.Second, func() { e.SignalWorkflow(wf.SignalDeregisterTrial, wf.DeregisterTrial{TrialID: "a"}) })
	e.at(4*time.Second, func() {
		v, err := e.QueryWorkflow(wf.QueryLibrary)
		require.NoError(t, err)
		var lib wf.PoolLibrary
		require.NoError(t, v.Get(&lib))
		require.Len(t, lib.Curves, 1)
		c := lib.Curves[0]
		assert.Equal(t, "a", c.Trial)
		assert.Equal(t, "c1", c.Campaign)
		assert.Equal(t, "resnet", c.Model)
		assert.Equal(t, 32, c.Batch)
		assert.Equal(t, []wf.CurvePoint{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 60}, {Nodes: 3, Throughput: 50}, {Nodes: 4, Throughput: 40}}, c.Points)
		v, err = e.QueryWorkflow(wf.QueryStatus)
		require.NoError(t, err)
		var s wf.PoolStatus
		require.NoError(t, v.Get(&s))
		assert.Equal(t, 1, s.LibraryCurves)
		assert.Empty(t, s.Library, "the status leaves the library out")
	})
	e.confirmReleases(5 * time.Second)
	e.endAt(5 * time.Second)
	e.ExecuteWorkflow(wf.PoolWorkflowName, poolInput())
	next := e.carried(t)
	require.NotNil(t, next.State)
	require.Empty(t, next.State.Trials)
	require.Len(t, next.State.Library, 1, "the library is carried across continue-as-new")

	// The next run: b trains resnet (its campaign says so), x another
	// model nothing is known of; five nodes.
	later := func(in wf.PoolInput) (b, x []string) {
		e := newPoolEnv(t, "b", "x")
		e.nodes.set("n1", "n2", "n3", "n4", "n5")
		e.at(time.Second, func() {
			rb := reg("b", 1, 4)
			rb.CampaignID, rb.Model, rb.Batch = "c2", "resnet", 32
			rx := reg("x", 1, 4)
			rx.CampaignID, rx.Model = "c3", "other"
			e.SignalWorkflow(wf.SignalRegisterTrial, rb)
			e.SignalWorkflow(wf.SignalRegisterTrial, rx)
		})
		e.at(4*time.Second, func() { b, x = e.last("b").Nodes, e.last("x").Nodes })
		e.confirmReleases(5 * time.Second)
		e.endAt(5 * time.Second)
		e.ExecuteWorkflow(wf.PoolWorkflowName, in)
		require.Len(t, e.carried(t).State.Library, len(in.State.Library), "the library is kept")
		return b, x
	}
	b, x := later(next)
	assert.Len(t, b, 1, "b is predicted from a's curve: more nodes make it slower")
	assert.Len(t, x, 4, "x, under the prior, takes the rest")

	// Without the library both are the prior, and share the nodes.
	forgot := next
	st := *next.State
	st.Library = nil
	forgot.State = &st
	b, x = later(forgot)
	assert.Greater(t, len(b), 1, "under the prior, b gets more than one node")
	assert.Equal(t, 5, len(b)+len(x))
}
