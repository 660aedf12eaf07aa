package jpa

import (
	"math"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The advisor's library names each trial's measured curve ID@type, keeps
// only valid points, one per count, sorted, and caps a campaign's curves;
// the prior prices a first node as the best measured throughput / n^0.9
// and further ones at the median; a trial
// nothing is known of gets the scaled prior, a measured one its
// prediction, exact at its measured counts.
func TestAdvisor(t *testing.T) {
	trials := []TrialView{
		{ID: "a", Group: "c", MinNodes: 1, MaxNodes: 4, Observations: []Observation{
			{Nodes: 2, Throughput: 180}, {Nodes: 1, Throughput: 100}, {Nodes: 3, Throughput: math.NaN()}, {Nodes: 2, Throughput: 181},
		}},
		{ID: "b", Group: "c", MinNodes: 1, MaxNodes: 4, Observations: []Observation{{Nodes: 1, NodeType: "v100", Throughput: 300}}},
		{ID: "new", Group: "other", MinNodes: 1, MaxNodes: 3},
	}
	adv := Advisor{SiblingsPerGroup: 1}
	curves := adv.Curves(trials)
	require.Len(t, curves, 2, "one per (group, type): a@ and b@v100")
	assert.Equal(t, "a@", curves[0].Name)
	assert.Equal(t, []Point{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 180}}, curves[0].Points)
	assert.Equal(t, "b@v100", curves[1].Name)
	assert.Len(t, Advisor{SiblingsPerGroup: 1}.Curves([]TrialView{trials[0], {ID: "a2", Group: "c", Observations: []Observation{{Nodes: 1, Throughput: 5}}}}), 1,
		"capped per campaign and type")

	scale := PriorScale(trials)
	// Scales 180/2^0.9 = 96.5, 181/2^0.9 = 97.0, 100, 300: the first node
	// is priced as the largest (optimism for the never-measured), further
	// nodes at the (upper) median.
	assert.InDelta(t, 300, scale.Best, 1e-9)
	assert.InDelta(t, 100, scale.Typical, 1e-9)
	assert.Equal(t, PriorScales{Best: 1, Typical: 1}, PriorScale(trials[2:]))
	assert.InDeltaSlice(t, []float64{300, 300 + 100*(math.Pow(2, 0.9)-1)}, throughputs(PriorAllocatorCurve(1, 2, scale)), 1e-9)
	assert.InDeltaSlice(t, []float64{300, 300 * math.Pow(2, 0.9), 300*math.Pow(2, 0.9) + 100*(math.Pow(3, 0.9)-math.Pow(2, 0.9))},
		throughputs(PriorAllocatorCurve(2, 3, scale)), 1e-9, "optimistic up to the smallest run, MinNodes")
	assert.InDeltaSlice(t, []float64{1, math.Pow(2, 0.9), math.Pow(3, 0.9)}, throughputs(PriorAllocatorCurve(1, 3, PriorScale(nil))), 1e-9,
		"nothing measured: n^0.9")

	lib, err := adv.Library(trials)
	require.NoError(t, err)
	c, fromPrior := adv.Curve(trials[2], lib, "", scale)
	require.True(t, fromPrior)
	assert.Equal(t, PriorAllocatorCurve(1, 3, scale), c)
	c, fromPrior = adv.Curve(trials[0], lib, "", scale)
	require.False(t, fromPrior)
	require.Len(t, c, 4)
	assert.InDelta(t, 100, c.At(1), 1e-9, "measured: priced at what it is, not at the prior's scale")
}

// With a GPU-ratio table, a trial measured on one type is predicted on
// another (scaled by the models' median ratio); without one it gets the
// prior there.
func TestAdvisorSpeedsPredictAcrossTypes(t *testing.T) {
	tr := TrialView{ID: "a", Group: "c", MinNodes: 1, MaxNodes: 2, Observations: []Observation{
		{Nodes: 1, NodeType: "k80", Throughput: 100}, {Nodes: 2, NodeType: "k80", Throughput: 190},
	}}
	gavel, err := ParseGavel(strings.NewReader("job_type,scale_factor,k80,v100\nA,1,1.0,3.0\nB,1,1.0,3.0\n"))
	require.NoError(t, err)
	for _, tc := range []struct {
		speeds    *TypeSpeeds
		fromPrior bool
	}{{nil, true}, {gavel, false}} {
		adv := Advisor{Speeds: tc.speeds}
		lib, err := adv.Library([]TrialView{tr})
		require.NoError(t, err)
		c, fromPrior := adv.Curve(tr, lib, "v100", PriorScales{Best: 1, Typical: 1})
		require.Equal(t, tc.fromPrior, fromPrior)
		if !fromPrior {
			assert.InEpsilon(t, 300, c.At(1), 1e-6, "3× the k80's 100 samples/s")
		}
	}
}

func throughputs(c allocator.Curve) []float64 {
	out := make([]float64, len(c))
	for i, p := range c {
		out[i] = p.Throughput
	}
	return out
}
