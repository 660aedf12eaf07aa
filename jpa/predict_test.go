package jpa

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func uslCurve(name, typ string, u USL, maxN int) PriorCurve {
	c := PriorCurve{Name: name, Model: name, NodeType: typ}
	for n := 1; n <= maxN; n++ {
		c.Points = append(c.Points, Point{Nodes: n, Throughput: u.At(float64(n))})
	}
	return c
}

func TestFitUSLRecoversParameters(t *testing.T) {
	for _, want := range []USL{
		{X1: 100, Alpha: 0.05, Beta: 0.001},
		{X1: 2500, Alpha: 0.2, Beta: 0.0},
		{X1: 7, Alpha: 0.01, Beta: 0.01},
	} {
		var ns []int
		var xs []float64
		for _, n := range []int{1, 2, 3, 4, 6, 8, 12, 16, 24, 32} {
			ns, xs = append(ns, n), append(xs, want.At(float64(n)))
		}
		got, rms, ok := fitUSL(ns, xs, 32, uslPrior{})
		require.True(t, ok)
		assert.InDelta(t, want.X1, got.X1, 1e-3*want.X1, "%+v", want)
		assert.InDelta(t, want.Alpha, got.Alpha, 1e-3, "%+v", want)
		assert.InDelta(t, want.Beta, got.Beta, 1e-4, "%+v", want)
		assert.Less(t, rms, 1e-4)
	}
}

func TestFitUSLNoPoints(t *testing.T) {
	_, _, ok := fitUSL([]int{0, 3}, []float64{1, math.NaN()}, 4, defaultUSLPrior)
	assert.False(t, ok)
}

func TestPredictExactAtMeasuredCounts(t *testing.T) {
	lib, err := NewLibrary([]PriorCurve{
		uslCurve("a", "x", USL{X1: 10, Alpha: 0.1}, 16),
		uslCurve("b", "x", USL{X1: 50, Alpha: 0.02, Beta: 0.002}, 16),
	})
	require.NoError(t, err)
	obs := []Observation{
		{Nodes: 1, NodeType: "x", Throughput: 120, Sigma: 3},
		{Nodes: 2, NodeType: "x", Throughput: 200},
		{Nodes: 4, NodeType: "x", Throughput: 330},
	}
	pred, err := Predict(obs, lib, Query{MinNodes: 1, MaxNodes: 16}, nil)
	require.NoError(t, err)
	require.Len(t, pred.Points, 16)
	for _, o := range obs {
		p, ok := pred.At(o.Nodes)
		require.True(t, ok)
		assert.True(t, p.Measured)
		assert.Equal(t, o.Throughput, p.Throughput)
	}
	p1, _ := pred.At(1)
	assert.InDelta(t, 3, p1.Sigma, 1e-9)
	for _, p := range pred.Points {
		assert.True(t, p.Throughput > 0 && !math.IsInf(p.Throughput, 0), "%+v", p)
	}
}

func TestPredictRecoversSharedShape(t *testing.T) {
	// Every library curve has the shape the trial has: prediction is exact
	// up to the trend blend, which is exact for a power law too.
	shape := USL{X1: 1, Alpha: 0.08, Beta: 0.001}
	var curves []PriorCurve
	for _, x1 := range []float64{3, 40, 500} {
		u := shape
		u.X1 = x1
		curves = append(curves, uslCurve("m"+string(rune('a'+len(curves))), "x", u, 32))
	}
	lib, err := NewLibrary(curves)
	require.NoError(t, err)
	trial := shape
	trial.X1 = 77
	var obs []Observation
	for _, n := range []int{1, 2, 4} {
		obs = append(obs, Observation{Nodes: n, NodeType: "x", Throughput: trial.At(float64(n))})
	}
	pred, err := Predict(obs, lib, Query{MinNodes: 1, MaxNodes: 32}, &Settings{TrendWeight: -1})
	require.NoError(t, err)
	for _, p := range pred.Points {
		assert.InEpsilon(t, trial.At(float64(p.Nodes)), p.Throughput, 1e-9, "n=%d", p.Nodes)
	}
}

func TestUncertaintyGrowsAwayFromMeasurements(t *testing.T) {
	lib, err := NewLibrary([]PriorCurve{uslCurve("a", "x", USL{X1: 10, Alpha: 0.1}, 64)})
	require.NoError(t, err)
	obs := []Observation{{Nodes: 1, NodeType: "x", Throughput: 10}, {Nodes: 2, NodeType: "x", Throughput: 18}}
	pred, err := Predict(obs, lib, Query{MinNodes: 1, MaxNodes: 64}, nil)
	require.NoError(t, err)
	prev := 0.0
	for _, p := range pred.Points[2:] {
		assert.Greater(t, p.SigmaLog, prev, "n=%d", p.Nodes)
		prev = p.SigmaLog
	}
}

func TestUncertaintyLargerWhereNeighboursDisagree(t *testing.T) {
	obs := []Observation{{Nodes: 1, NodeType: "x", Throughput: 10}, {Nodes: 2, NodeType: "x", Throughput: 18}}
	agree, err := NewLibrary([]PriorCurve{
		uslCurve("a", "x", USL{X1: 10, Alpha: 0.1}, 16),
		uslCurve("b", "x", USL{X1: 20, Alpha: 0.1}, 16),
	})
	require.NoError(t, err)
	disagree, err := NewLibrary([]PriorCurve{
		uslCurve("a", "x", USL{X1: 10, Alpha: 0.0}, 16),
		uslCurve("b", "x", USL{X1: 20, Alpha: 0.4, Beta: 0.01}, 16),
	})
	require.NoError(t, err)
	pa, err := Predict(obs, agree, Query{MinNodes: 1, MaxNodes: 16}, nil)
	require.NoError(t, err)
	pd, err := Predict(obs, disagree, Query{MinNodes: 1, MaxNodes: 16}, nil)
	require.NoError(t, err)
	a16, _ := pa.At(16)
	d16, _ := pd.At(16)
	assert.Greater(t, d16.SigmaLog, a16.SigmaLog+0.1)
}

func TestPredictWithoutLibraryFallsBackToUSL(t *testing.T) {
	u := USL{X1: 100, Alpha: 0.05, Beta: 0.001}
	var obs []Observation
	for _, n := range []int{1, 2, 4, 8} {
		obs = append(obs, Observation{Nodes: n, Throughput: u.At(float64(n))})
	}
	pred, err := Predict(obs, nil, Query{MinNodes: 1, MaxNodes: 16}, &Settings{TrendWeight: -1})
	require.NoError(t, err)
	p16, _ := pred.At(16)
	assert.InEpsilon(t, u.At(16), p16.Throughput, 0.05)
	assert.GreaterOrEqual(t, p16.SigmaLog, 0.2)
}

func TestSiblingsOfTheCampaignDominate(t *testing.T) {
	sib := uslCurve("sibling", "x", USL{X1: 10, Alpha: 0.3}, 16)
	sib.Group = "camp"
	other := uslCurve("other", "x", USL{X1: 10, Alpha: 0.0}, 16)
	lib, err := NewLibrary([]PriorCurve{sib, other})
	require.NoError(t, err)
	obs := []Observation{{Nodes: 1, NodeType: "x", Throughput: 20}, {Nodes: 2, NodeType: "x", Throughput: 2 * 20 / 1.3}}
	pred, err := Predict(obs, lib, Query{MinNodes: 1, MaxNodes: 16, Group: "camp"}, &Settings{TrendWeight: -1})
	require.NoError(t, err)
	p16, _ := pred.At(16)
	want := 2 * sib.Points[15].Throughput
	assert.InEpsilon(t, want, p16.Throughput, 0.02)
	assert.Equal(t, "sibling", pred.Neighbours[0])

	// With no observation at all, the siblings are the prediction.
	pred, err = Predict(nil, lib, Query{MinNodes: 1, MaxNodes: 20, Group: "camp", NodeType: "x"}, nil)
	require.NoError(t, err)
	p4, _ := pred.At(4)
	assert.InEpsilon(t, sib.Points[3].Throughput, p4.Throughput, 1e-9)
	p20, _ := pred.At(20)
	assert.Greater(t, p20.Throughput, 0.0)
	_, err = Predict(nil, lib, Query{MinNodes: 1, MaxNodes: 4, Group: "nobody"}, nil)
	assert.ErrorIs(t, err, ErrNoData)
}

// A campaign that trains several models (each trial naming its own) does
// not lend one model's curve to another at a sibling's weight: with the
// models named, a trial nothing is measured of is predicted from the
// curves of its own model only, and a measured one leans on its own
// model's shape; with a model unknown on either side, every curve of the
// campaign is a sibling as before.
func TestSiblingsAreOfTheSameModel(t *testing.T) {
	same := uslCurve("same", "x", USL{X1: 10, Alpha: 0.3}, 16)
	same.Group, same.Model = "camp", "m"
	other := uslCurve("other", "x", USL{X1: 10, Alpha: 0.0}, 16)
	other.Group, other.Model = "camp", "k"
	lib, err := NewLibrary([]PriorCurve{other, same})
	require.NoError(t, err)

	// Nothing measured: the prediction is the siblings' mean.
	pred, err := Predict(nil, lib, Query{MinNodes: 1, MaxNodes: 16, Group: "camp", Model: "m", NodeType: "x"}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"same"}, pred.Neighbours, "only the curve of its own model")
	p16, _ := pred.At(16)
	assert.InEpsilon(t, same.Points[15].Throughput, p16.Throughput, 1e-9)
	pred, err = Predict(nil, lib, Query{MinNodes: 1, MaxNodes: 16, Group: "camp", NodeType: "x"}, nil)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"same", "other"}, pred.Neighbours, "model unknown: every curve of the campaign")
	_, err = Predict(nil, lib, Query{MinNodes: 1, MaxNodes: 16, Group: "camp", Model: "z", NodeType: "x"}, nil)
	assert.ErrorIs(t, err, ErrNoData, "a model no curve of the campaign trains")

	// Measured at 1 and 2 nodes as `other` scales (linearly), the trial of
	// model m follows `other`'s shape only when `other` is a sibling.
	obs := []Observation{{Nodes: 1, NodeType: "x", Throughput: 20}, {Nodes: 2, NodeType: "x", Throughput: 40}}
	linear := 20 * other.Points[15].Throughput / other.Points[0].Throughput
	pred, err = Predict(obs, lib, Query{MinNodes: 1, MaxNodes: 16, Group: "camp", Model: "k"}, &Settings{TrendWeight: -1})
	require.NoError(t, err)
	p16, _ = pred.At(16)
	assert.InEpsilon(t, linear, p16.Throughput, 0.02, "model k: other is its sibling")
	assert.Equal(t, "other", pred.Neighbours[0])
}

func TestPredictOnAnotherNodeType(t *testing.T) {
	gavel := "job_type,scale_factor,k80,p100,v100\nResNet-50 (batch size 64),1,1.0,3.0,4.0\nResNet-50 (batch size 64),2,1.9,5.5,7.0\nLM,1,2.0,4.0,8.0\n"
	speeds, err := ParseGavel(strings.NewReader(gavel))
	require.NoError(t, err)
	r, sig, ok := speeds.Ratio("ResNet-50 (batch size 64)", "k80", "v100")
	require.True(t, ok)
	assert.InDelta(t, 4, r, 1e-12)
	assert.InDelta(t, 0.05, sig, 1e-12)
	// Unknown model: median ratio over the models measured on both.
	r, _, ok = speeds.Ratio("Transformer", "k80", "v100")
	require.True(t, ok)
	assert.InDelta(t, math.Sqrt(4*4), r, 1e-9)

	lib, err := NewLibrary([]PriorCurve{uslCurve("a", "k80", USL{X1: 10, Alpha: 0.1}, 8)})
	require.NoError(t, err)
	lib.Speeds().Merge(speeds)
	obs := []Observation{{Nodes: 1, NodeType: "k80", Throughput: 30}, {Nodes: 2, NodeType: "k80", Throughput: 50}}
	pred, err := Predict(obs, lib, Query{MinNodes: 1, MaxNodes: 8, NodeType: "v100", Model: "LM"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "v100", pred.NodeType)
	p1, _ := pred.At(1)
	assert.InDelta(t, 120, p1.Throughput, 1e-9)
	assert.False(t, p1.Measured)
	assert.Greater(t, p1.SigmaLog, 0.05)

	_, err = Predict(obs, lib, Query{MinNodes: 1, MaxNodes: 8, NodeType: "tpu"}, nil)
	assert.ErrorIs(t, err, ErrNoTypeRatio)
}

func TestParseGavelErrors(t *testing.T) {
	_, err := ParseGavel(strings.NewReader("a,b\n"))
	assert.ErrorIs(t, err, ErrBadSpeeds)
	_, err = ParseGavel(strings.NewReader("job_type,scale_factor,k80\nX,1,fast\n"))
	assert.ErrorIs(t, err, ErrBadSpeeds)
	assert.Contains(t, err.Error(), "k80")
}

func TestPredictRejectsBadInput(t *testing.T) {
	obs := []Observation{{Nodes: 1, Throughput: 1}}
	_, err := Predict(obs, nil, Query{MinNodes: 0, MaxNodes: 3}, nil)
	assert.ErrorIs(t, err, ErrInvalidQuery)
	_, err = Predict(obs, nil, Query{MinNodes: 4, MaxNodes: 3}, nil)
	assert.ErrorIs(t, err, ErrInvalidQuery)
	for field, s := range map[string]Settings{
		"Neighbours":     {Neighbours: -1},
		"Bandwidth":      {Bandwidth: -1},
		"SameTypeWeight": {SameTypeWeight: -2},
		"TrendWeight":    {TrendWeight: 1},
		"Growth":         {Growth: -1},
		"NoiseFloor":     {NoiseFloor: math.NaN()},
	} {
		_, err := Predict(obs, nil, Query{MinNodes: 1, MaxNodes: 3}, &s)
		require.ErrorIs(t, err, ErrInvalidSettings, field)
		assert.Contains(t, err.Error(), field)
	}
	_, err = NewLibrary([]PriorCurve{{Name: "bad", Points: []Point{{Nodes: 2, Throughput: 1}, {Nodes: 2, Throughput: 3}}}})
	assert.ErrorContains(t, err, "Points[1].Nodes")
}

func TestOptimisticIsBounded(t *testing.T) {
	pred := Prediction{Points: []PredictedPoint{
		{Nodes: 1, Throughput: 10, Measured: true},
		{Nodes: 2, Throughput: 18, Sigma: 4},
		{Nodes: 3, Throughput: 25, Sigma: 10},
		{Nodes: 4, Throughput: 5, Sigma: 1},
	}}
	opt, counts := pred.Optimistic(nil)
	assert.Equal(t, []int{3}, counts)
	assert.Equal(t, 35.0, opt.Points[2].Throughput)
	assert.Equal(t, 18.0, opt.Points[1].Throughput)
	assert.Equal(t, 25.0, pred.Points[2].Throughput, "the receiver is not modified")

	_, counts = pred.Optimistic(&Explore{C: 2, MaxUnmeasured: 5})
	// Count 4's upper value 7 does not beat the measured 10: not worth it.
	assert.Equal(t, []int{3, 2}, counts)
	_, counts = pred.Optimistic(&Explore{C: -1})
	assert.Empty(t, counts)
}

func TestAllocatorCurve(t *testing.T) {
	pred := Prediction{Points: []PredictedPoint{
		{Nodes: 2, Throughput: 10, Measured: true},
		{Nodes: 3, Throughput: 12, Sigma: 5},
		{Nodes: 4, Throughput: math.NaN()},
	}}
	c := pred.AllocatorCurve(false)
	require.Len(t, c, 3)
	assert.Equal(t, 2, c[0].Nodes)
	assert.Equal(t, 12.0, c[1].Throughput)
	assert.Equal(t, 0.0, c[2].Throughput)
	assert.Equal(t, 4, c[len(c)-1].Nodes)
	co := pred.AllocatorCurve(true)
	assert.Equal(t, 17.0, co[1].Throughput)
}

// A profile of the same model (here: the same app on another cluster is
// removed; the same app and cluster at another batch size stays) pulls the
// prediction towards the truth; without Query.Model it is one curve among
// many.
func TestSameModelWeightUsesTheModelsProfile(t *testing.T) {
	truth := []Point{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 190}, {Nodes: 4, Throughput: 300}, {Nodes: 8, Throughput: 330}}
	own := PriorCurve{Name: "mine@other-batch", Model: "mine", NodeType: "gpu", Points: []Point{{Nodes: 1, Throughput: 50}, {Nodes: 2, Throughput: 95}, {Nodes: 4, Throughput: 150}, {Nodes: 8, Throughput: 165}}}
	linear := PriorCurve{Name: "linear", Model: "other", NodeType: "gpu", Points: []Point{{Nodes: 1, Throughput: 10}, {Nodes: 2, Throughput: 20}, {Nodes: 4, Throughput: 40}, {Nodes: 8, Throughput: 80}}}
	lib, err := NewLibrary([]PriorCurve{own, linear})
	require.NoError(t, err)
	obs := []Observation{{Nodes: 1, NodeType: "gpu", Throughput: 100}, {Nodes: 2, NodeType: "gpu", Throughput: 190}}
	q := Query{MinNodes: 1, MaxNodes: 8, NodeType: "gpu"}
	anon, err := Predict(obs, lib, q, nil)
	require.NoError(t, err)
	q.Model = "mine"
	named, err := Predict(obs, lib, q, nil)
	require.NoError(t, err)
	at8 := func(p Prediction) float64 { pt, _ := p.At(8); return pt.Throughput }
	require.Less(t, math.Abs(at8(named)-truth[3].Throughput), math.Abs(at8(anon)-truth[3].Throughput))
	require.InEpsilon(t, 330, at8(named), 0.2, "the 15%% own-trend shrinkage pulls it up a little")

	// With no measurement, the model's profile answers where no sibling does.
	cold, err := Predict(nil, lib, q, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"mine@other-batch"}, cold.Neighbours)
}

func TestRepresentatives(t *testing.T) {
	pts := func(ns ...int) []Point {
		var out []Point
		for _, n := range ns {
			out = append(out, Point{Nodes: n, Throughput: float64(n)})
		}
		return out
	}
	curves := []PriorCurve{
		{Name: "profiled", Points: pts(1, 2)},
		{Name: "a1", Group: "a", Points: pts(1)},
		{Name: "a2", Group: "a", Points: pts(1, 2, 4)},
		{Name: "b1", Group: "b", Points: pts(1)},
		{Name: "a3", Group: "a", Points: pts(1, 2)},
		{Name: "a4", Group: "a", NodeType: "gpu", Points: pts(1)},
		{Name: "a5", Group: "a", Points: pts(1, 2)},
		{Name: "am", Group: "a", Model: "m", Points: pts(1)},
	}
	var names []string
	for _, c := range Representatives(curves, 2) {
		names = append(names, c.Name)
	}
	// Group a on the default type keeps a2 (3 points) and a3 (2 points,
	// before a5); other groups, models and types are under the cap.
	require.Equal(t, []string{"profiled", "a2", "b1", "a3", "a4", "am"}, names)
	require.Len(t, Representatives(curves, 0), len(curves))
}

// Where a sibling of the campaign measured a count, the trial's
// uncertainty there is the siblings' spread, not an extrapolation from
// its own counts; elsewhere the extrapolation term stays.
func TestSiblingMeasuredCountsAreNotExtrapolated(t *testing.T) {
	u := USL{X1: 100, Alpha: 0.02, Beta: 0.0005}
	sib := uslCurve("sib", "", u, 8)
	sib.Group, sib.Points = "c", []Point{sib.Points[0], sib.Points[1], sib.Points[7]} // 1, 2, 8
	lib, err := NewLibrary([]PriorCurve{sib})
	require.NoError(t, err)
	obs := []Observation{{Nodes: 1, Throughput: u.At(1)}, {Nodes: 2, Throughput: u.At(2)}}
	q := Query{MinNodes: 1, MaxNodes: 8}
	alone, err := Predict(obs, lib, q, nil)
	require.NoError(t, err)
	q.Group = "c"
	withSibling, err := Predict(obs, lib, q, nil)
	require.NoError(t, err)
	at := func(p Prediction, n int) PredictedPoint { pt, _ := p.At(n); return pt }
	// At 8 the sibling measured: only noise and spread remain.
	assert.Less(t, at(withSibling, 8).SigmaLog, 0.05)
	assert.Greater(t, at(alone, 8).SigmaLog, 0.15) // Growth·ln(8/2) ≈ 0.21
	assert.True(t, at(withSibling, 8).SiblingMeasured)
	// At 5 nobody measured: the extrapolation runs from the nearest count
	// measured by anyone, the sibling's 8 (Growth·ln(8/5) ≈ 0.07) rather
	// than the trial's own 2 (Growth·ln(5/2) ≈ 0.14).
	assert.InDelta(t, 0.15*math.Log(8.0/5), at(withSibling, 5).SigmaLog, 0.02)
	assert.InDelta(t, 0.15*math.Log(5.0/2), at(alone, 5).SigmaLog, 0.02)
	assert.False(t, at(withSibling, 5).SiblingMeasured)
}

// A count an aligned sibling (one sharing a measured count with the
// trial) measured carries no optimism, however few its points.
func TestOptimismSkipsCountsAnAlignedSiblingMeasured(t *testing.T) {
	u := USL{X1: 100, Alpha: 0.02, Beta: 0.0005}
	for _, sibPoints := range [][]int{{1, 8}, {1, 4, 8}} {
		sib := PriorCurve{Name: "sib", Group: "c"}
		for _, n := range sibPoints {
			sib.Points = append(sib.Points, Point{Nodes: n, Throughput: u.At(float64(n))})
		}
		lib, err := NewLibrary([]PriorCurve{sib})
		require.NoError(t, err)
		q := Query{MinNodes: 1, MaxNodes: 8, Group: "c", Self: "me"}
		for _, obs := range [][]Observation{{{Nodes: 1, Throughput: u.At(1)}}} {
			pred, err := Predict(obs, lib, q, nil)
			require.NoError(t, err)
			pt, _ := pred.At(8)
			assert.True(t, pt.SiblingMeasured, "sibling points %v, %d observations", sibPoints, len(obs))
			_, explored := pred.Optimistic(nil)
			assert.NotContains(t, explored, 8, "sibling points %v, %d observations", sibPoints, len(obs))
		}
	}
}

// A trial's own prior (an architecture's predicted curve) is its
// prediction before it is measured, ahead of siblings that train other
// networks; once measured at one count, the prior lends its shape,
// rescaled to the measurement, outvoting the siblings' shape.
func TestQueryPriorBeforeAndAfterMeasuring(t *testing.T) {
	sib := uslCurve("sibling", "x", USL{X1: 10}, 8) // linear
	sib.Group = "nas"
	lib, err := NewLibrary([]PriorCurve{sib})
	require.NoError(t, err)
	own := USL{X1: 100, Alpha: 0.4} // saturating
	var prior []Point
	for _, n := range []int{1, 2, 4, 8} {
		prior = append(prior, Point{Nodes: n, Throughput: own.At(float64(n))})
	}
	q := Query{MinNodes: 1, MaxNodes: 10, NodeType: "x", Group: "nas", Prior: prior, PriorSigma: 0.1}

	pred, err := Predict(nil, lib, q, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"prior"}, pred.Neighbours)
	for _, n := range []int{1, 2, 4, 8} {
		p, _ := pred.At(n)
		assert.InEpsilon(t, own.At(float64(n)), p.Throughput, 1e-9, "at %d nodes", n)
		assert.InDelta(t, math.Hypot(0.1, 0.15), p.SigmaLog, 1e-12, "σ_log: the prior's and the growth term")
	}
	p3, _ := pred.At(3) // between counts: a power law
	f := math.Log(1.5) / math.Log(2)
	assert.InEpsilon(t, math.Exp((1-f)*math.Log(own.At(2))+f*math.Log(own.At(4))), p3.Throughput, 1e-9)
	p10, _ := pred.At(10) // beyond: linear from the last
	assert.InEpsilon(t, own.At(8)*10/8, p10.Throughput, 1e-9)

	// Measured at 1 node at half the prior's speed: the shape is the
	// prior's (a saturating curve), weighted 10:1 in log against the one
	// linear sibling's (PriorWeight against SameTypeWeight ×
	// SameGroupWeight).
	obs := []Observation{{Nodes: 1, NodeType: "x", Throughput: 50}}
	pred, err = Predict(obs, lib, q, &Settings{TrendWeight: -1})
	require.NoError(t, err)
	p8, _ := pred.At(8)
	want := math.Exp((10*math.Log(0.5*own.At(8)) + math.Log(8*50)) / 11)
	assert.InEpsilon(t, want, p8.Throughput, 1e-6, "8 nodes: the prior's speedup %.2f, the sibling's 8", own.At(8)/own.At(1))
	assert.Equal(t, "prior", pred.Neighbours[0])

	// Without the prior the sibling's linear shape is all there is.
	q.Prior, q.PriorSigma = nil, 0
	pred, err = Predict(obs, lib, q, &Settings{TrendWeight: -1})
	require.NoError(t, err)
	p8, _ = pred.At(8)
	assert.InEpsilon(t, 8*50.0, p8.Throughput, 0.05)
}

func TestQueryPriorRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{Query{MinNodes: 1, MaxNodes: 2, PriorSigma: 0.1}, "PriorSigma is 0.1 without a Prior"},
		{Query{MinNodes: 1, MaxNodes: 2, Prior: []Point{{Nodes: 1, Throughput: 5}}, PriorSigma: -1}, "PriorSigma is -1"},
		{Query{MinNodes: 1, MaxNodes: 2, Prior: []Point{{Nodes: 2, Throughput: 5}, {Nodes: 1, Throughput: 6}}}, "Prior: prior curve \"prior\": Points[1].Nodes is 1, not above 2"},
		{Query{MinNodes: 1, MaxNodes: 2, Prior: []Point{{Nodes: 1, Throughput: math.NaN()}}}, "Points[0].Throughput is NaN"},
	} {
		_, err := Predict(nil, nil, tc.q, nil)
		require.ErrorIs(t, err, ErrInvalidQuery, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, err := Predict(nil, nil, Query{MinNodes: 1, MaxNodes: 1, Prior: []Point{{Nodes: 1, Throughput: 5}}}, &Settings{PriorWeight: -1})
	assert.ErrorIs(t, err, ErrInvalidSettings)
}
