package searchbench

import (
	"math"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// The black-box functions take 0 at their documented minimisers and, at
// other points, the values scripts/search_vs_optuna.py's copies give
// (/usr/bin/python3, frozen here), so that both sides of the comparison
// search the same function.
func TestBlackBoxValues(t *testing.T) {
	objs, err := LookupObjectives([]string{"rotquad6", "styblinski5", "logmixed"})
	if err != nil {
		t.Fatal(err)
	}
	ramp := func(n int) hpo.Params { // x_i = 0.5i − 1
		v := make([]float64, n)
		for i := range v {
			v[i] = 0.5*float64(i) - 1
		}
		return point(v...)
	}
	var shifted []float64
	for _, s := range styblinskiShift {
		shifted = append(shifted, s-2.903534)
	}
	for _, c := range []struct {
		obj  Objective
		at   hpo.Params
		want float64
	}{
		{objs[0], point(rotQuadShift[:]...), 0},
		{objs[0], point(0, 0, 0, 0, 0, 0), 5552.927229469484},
		{objs[0], ramp(6), 3093.4972547461693},
		{objs[1], point(shifted...), 0},
		{objs[1], point(0, 0, 0, 0, 0), 176.4825785188571},
		{objs[1], ramp(5), 166.65457851885708},
		{objs[2], hpo.Params{"lr": hpo.Float(1e-3), "batch": hpo.Float(128), "wd": hpo.Float(math.Pow(10, -3.4)),
			"dropout": hpo.Float(0.3), "layers": hpo.Float(4), "act": hpo.String("gelu")}, 0},
		{objs[2], hpo.Params{"lr": hpo.Float(0.01), "batch": hpo.Float(512), "wd": hpo.Float(1e-5),
			"dropout": hpo.Float(0.1), "layers": hpo.Float(7), "act": hpo.String("tanh")}, 2.2473019369088423},
	} {
		if err := c.obj.Space.Contains(c.at); err != nil {
			t.Fatalf("%s: %v", c.obj.Name, err)
		}
		if got := c.obj.F(c.at); math.Abs(got-c.want) > 1e-9*max(1, math.Abs(c.want)) {
			t.Errorf("%s at %v = %.17g, want %.17g", c.obj.Name, c.at, got, c.want)
		}
		if c.obj.Optimum != 0 {
			t.Errorf("%s: optimum %v, want 0", c.obj.Name, c.obj.Optimum)
		}
	}
}
