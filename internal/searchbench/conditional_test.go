package searchbench

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// The conditional problem takes its minimum at SGD's optimum and, at
// other points, the values scripts/conditional_vs_optuna.py's copy gives
// (/usr/bin/python3, frozen here), so that both sides search the same
// function.
func TestConditionalValues(t *testing.T) {
	o := conditional()
	if err := o.Space.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   hpo.Params
		want float64
	}{
		{hpo.Params{"optimizer": hpo.String("sgd"), "sgd_lr": hpo.Float(math.Pow(10, -0.35) * 0.1), "momentum": hpo.Float(0.9),
			"weight_decay": hpo.Float(math.Pow(10, -3.5)), "batch_size": hpo.Float(256)}, 0.04},
		{hpo.Params{"optimizer": hpo.String("sgd"), "sgd_lr": hpo.Float(0.01), "momentum": hpo.Float(0.5),
			"weight_decay": hpo.Float(1e-4), "batch_size": hpo.Float(64)}, 1.050169034998354},
		{hpo.Params{"optimizer": hpo.String("adam"), "adam_lr": hpo.Float(1e-3), "beta1": hpo.Float(0.8), "eps": hpo.Float(1e-6),
			"weight_decay": hpo.Float(1e-5), "batch_size": hpo.Float(300)}, 0.2624417673211378},
		{hpo.Params{"optimizer": hpo.String("rmsprop"), "rmsprop_lr": hpo.Float(1e-4), "alpha": hpo.Float(0.99),
			"weight_decay": hpo.Float(1e-3), "batch_size": hpo.Float(17)}, 0.5029161854873301},
	} {
		if err := o.Space.Contains(c.at); err != nil {
			t.Fatal(err)
		}
		if got := o.F(c.at); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("at %v = %.17g, want %.17g", c.at, got, c.want)
		}
	}
}

// TPE, fitting each optimiser's parameters on the trials that chose that
// optimiser, finds better configurations than random search on the
// conditional problem: the median best after 100 trials on 8 workers over
// seeds 1..10 (the same seeds and trial durations for both).
func TestTPEBeatsRandomOnConditional(t *testing.T) {
	if testing.Short() {
		t.Skip("100-trial searches")
	}
	tpe, random := medianBestOnConditional(t, hpo.AlgorithmTPE, hpo.Settings{}), medianBestOnConditional(t, hpo.AlgorithmRandom, hpo.Settings{})
	t.Logf("median best after 100 trials: tpe %.4f, random %.4f", tpe, random)
	if !(tpe < random) {
		t.Errorf("tpe's median best %.4f, not below random search's %.4f", tpe, random)
	}
}

// TPE with group: true (Optuna's multivariate=True, group=True: the
// shared parameters with the optimiser jointly, each optimiser's own
// jointly on the trials that chose it) also beats random search on the
// conditional problem, the same seeds and measure as above.
func TestGroupTPEBeatsRandomOnConditional(t *testing.T) {
	if testing.Short() {
		t.Skip("100-trial searches")
	}
	group := medianBestOnConditional(t, hpo.AlgorithmTPE, hpo.Settings{TPE: &hpo.TPESettings{Multivariate: true, Group: true}})
	random := medianBestOnConditional(t, hpo.AlgorithmRandom, hpo.Settings{})
	t.Logf("median best after 100 trials: tpe group %.4f, random %.4f", group, random)
	if !(group < random) {
		t.Errorf("group tpe's median best %.4f, not below random search's %.4f", group, random)
	}
}

// Every bench method that searches conditional spaces runs on the
// conditional problem (hpo's tests check that each proposes exactly the
// active parameters); the others are skipped with hpo's reason.
func TestBenchMethodsOnConditional(t *testing.T) {
	o := conditional()
	ran := 0
	for _, m := range Methods() {
		if err := CanRun(m, o); err != nil {
			if !strings.Contains(err.Error(), "does not search a conditional space") {
				t.Errorf("%s: %v", m, err)
			}
			continue
		}
		run, err := Run(Setup{Algorithm: m, Settings: DefaultSettings(m, o), Objective: o, Workers: 4, Trials: 30, Seed: 2, CostSigma: 0.3})
		if err != nil {
			t.Errorf("%s: %v", m, err)
			continue
		}
		if ran++; len(run) == 0 || run[len(run)-1].Best < o.Optimum-1e-12 {
			t.Errorf("%s: %d steps, best below the optimum %v", m, len(run), o.Optimum)
		}
	}
	if ran < 3 {
		t.Errorf("%d methods ran", ran)
	}
}

// The conditional space, as JSON, hashes to what hpo's tests pin for
// their copy of it (hpo's benchConditionalSpaceSHA, used by
// TestTPEGroupsAsOptuna): change both together.
func TestConditionalSpaceFingerprint(t *testing.T) {
	b, err := json.Marshal(conditionalSpace())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("%x", sha256.Sum256(b))[:16], "e705c75237c1f658"; got != want {
		t.Errorf("fingerprint %s, want %s (hpo/tpe_group_test.go's copy)", got, want)
	}
}

// medianBestOnConditional is alg's median best after 100 trials on the
// conditional problem, seeds 1–10, 8 workers.
func medianBestOnConditional(t *testing.T, alg string, set hpo.Settings) float64 {
	t.Helper()
	c, err := Measure(Setup{Algorithm: alg, Settings: set, Objective: conditional(), Workers: 8, Trials: 100, CostSigma: DefaultCostSigma}, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	var best []float64
	for _, r := range c.Runs {
		best = append(best, r[len(r)-1].Best)
	}
	slices.Sort(best)
	return (best[4] + best[5]) / 2
}
