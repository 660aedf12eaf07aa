package searchbench

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

func point(vals ...float64) hpo.Params {
	p := hpo.Params{}
	for i, v := range vals {
		p[fmt.Sprintf("x%d", i+1)] = hpo.Float(v)
	}
	return p
}

// Each objective takes its documented minimum where the literature puts it.
func TestObjectivesMinima(t *testing.T) {
	objs := map[string]Objective{}
	for _, o := range Objectives() {
		objs[o.Name] = o
		if err := o.Space.Validate(); err != nil {
			t.Errorf("%s: %v", o.Name, err)
		}
	}
	for _, tc := range []struct {
		name string
		at   hpo.Params
	}{
		{"branin", point(-math.Pi, 12.275)},
		{"branin", point(math.Pi, 2.275)},
		{"branin", point(9.42478, 2.475)},
		{"hartmann6", point(0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573)},
		{"rosenbrock10", point(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)},
		{"mixed", hpo.Params{"x": hpo.Float(1), "lr": hpo.Float(math.Pow(10, -2.5)), "layers": hpo.Float(7), "opt": hpo.String("adam")}},
	} {
		o := objs[tc.name]
		if got := o.F(tc.at); math.Abs(got-o.Optimum) > 1e-4 {
			t.Errorf("%s at its minimiser = %v, want %v", tc.name, got, o.Optimum)
		}
	}
	if _, err := LookupObjectives([]string{"branin", "sphere"}); err == nil {
		t.Error("an unknown objective: no error")
	}
}

// Runs are deterministic per seed, the curve is the running minimum, and a
// grid smaller than the budget ends early.
func TestRunIsDeterministicAndMonotone(t *testing.T) {
	s := Setup{Algorithm: hpo.AlgorithmRandom, Objective: branin(), Workers: 4, Trials: 50, Seed: 9, CostSigma: 0.3}
	a, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(s)
	if !slices.Equal(a, b) || len(a) != 50 {
		t.Fatalf("two runs of seed 9: %d and %d values, equal %v", len(a), len(b), slices.Equal(a, b))
	}
	for i := 1; i < len(a); i++ {
		if a[i].Best > a[i-1].Best || a[i].Budget != float64(i+1) {
			t.Fatalf("step %d: %+v after %+v: want the running minimum and one budget per trial", i, a[i], a[i-1])
		}
	}
	s.Algorithm, s.Settings = hpo.AlgorithmGrid, hpo.Settings{Grid: &hpo.GridSettings{Resolution: 3}}
	g, err := Run(s)
	if err != nil || len(g) != 9 {
		t.Fatalf("grid 3×3: %d trials, %v", len(g), err)
	}
	c, err := Measure(s, 1, 3)
	if err != nil || len(c.Best) != 50 || c.At(50) != c.At(9) {
		t.Errorf("measure of a 9-point grid over 50 trials: %d points, at 50 %v, at 9 %v, %v", len(c.Best), c.At(50), c.At(9), err)
	}
}

func TestQuartiles(t *testing.T) {
	if q := quartiles([]float64{4, 1, 3, 2, 5}); q != (Quartiles{2, 3, 4}) {
		t.Errorf("quartiles of 1..5 = %+v", q)
	}
}

// The learning-curve table parses whole, every configuration reaches the
// budget, and a stopping searcher on it stops trials early: it spends less
// than a full budget per trial.
func TestGoMLPCurvesAndStopping(t *testing.T) {
	o := goMLP()
	if o.FullBudget != 76800 || o.Optimum <= 0 || o.Optimum > 0.1 {
		t.Fatalf("go-mlp: budget %v, optimum %v", o.FullBudget, o.Optimum)
	}
	pts := o.Points(hpo.Params{"lr": hpo.Float(0.3), "hidden": hpo.Float(16), "batch": hpo.String("32"), "momentum": hpo.String("0.9")})
	if len(pts) != 40 || pts[len(pts)-1].Value != o.Optimum {
		t.Errorf("the best configuration: %d points, last %v, want 40 ending at the optimum %v", len(pts), pts[len(pts)-1], o.Optimum)
	}
	s := Setup{Algorithm: hpo.AlgorithmASHA, Objective: o, Workers: 8, Trials: 60, Seed: 1, CostSigma: 0.3}
	s.Settings = DefaultSettings(s.Algorithm, o)
	run, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	if spent := run[len(run)-1].Budget; len(run) != 60 || spent > 30 {
		t.Errorf("asha: %d trials spent %v full budgets, want 60 trials and well under 60", len(run), spent)
	}
	for _, bad := range []string{"x\n", "lr,hidden,batch,momentum,samples,val_loss\n1,2,3\n", "lr,hidden,batch,momentum,samples,val_loss\n1,2,3,4,5,NaN\n"} {
		if _, err := parseCurves([]byte(bad)); err == nil {
			t.Errorf("parseCurves(%q): no error", bad)
		}
	}
}
