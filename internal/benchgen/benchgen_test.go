package benchgen

import (
	"testing"

	"github.com/gleaner-hpc/gleaner/internal/dataset"
)

// curvesOn is two applications measured on each of clusters.
func curvesOn(clusters ...string) []dataset.ScalingCurve {
	var out []dataset.ScalingCurve
	for k, cl := range clusters {
		for a, app := range []string{"a", "b"} {
			base := float64(100 * (k + 1) * (a + 1))
			out = append(out, dataset.ScalingCurve{App: app, Cluster: cl, LocalBatch: 32, Points: []dataset.ScalingPoint{
				{Nodes: 1, SamplesPerS: base}, {Nodes: 2, SamplesPerS: 1.8 * base}, {Nodes: 4, SamplesPerS: 3 * base},
			}})
		}
	}
	return out
}

// With node types, nodes cycle through the first K clusters, every trial
// has its application's curve on each type (that cluster's), running
// trials hold nodes of one type, and the problem is valid.
func TestProblemWithNodeTypes(t *testing.T) {
	cfg := Config{Trials: 40, Nodes: 64, Curves: curvesOn("x", "y", "z"), Types: 2}
	p, err := Problem(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("invalid problem: %v", err)
	}
	typeOf := map[string]string{}
	for i, n := range p.Nodes {
		if want := []string{"x", "y"}[i%2]; n.Type != want {
			t.Fatalf("node %d of type %q, want %q", i, n.Type, want)
		}
		typeOf[n.ID] = n.Type
	}
	for _, tr := range p.Trials {
		if len(tr.CurvesByType) != 2 || tr.Curve != nil {
			t.Fatalf("trial %s: curves %v / %v, want one per type", tr.ID, tr.CurvesByType, tr.Curve)
		}
		// Cluster y's curves are twice cluster x's for the same app.
		if x, y := tr.CurvesByType["x"][0].Throughput, tr.CurvesByType["y"][0].Throughput; y != 2*x {
			t.Errorf("trial %s: %v on x, %v on y: want its application's curve on each cluster", tr.ID, x, y)
		}
		held := map[string]bool{}
		for _, id := range tr.Nodes {
			if typ, ok := typeOf[id]; ok {
				held[typ] = true
			}
		}
		if len(held) > 1 {
			t.Errorf("trial %s holds nodes of types %v", tr.ID, held)
		}
	}
	if _, err := Problem(Config{Trials: 1, Nodes: 1, Curves: curvesOn("x"), Types: 2}, 1); err == nil {
		t.Error("2 types over curves of 1 cluster: no error")
	}
}
