package hpo

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// tpeUnconditionalPins are the schedules TPE gave on testSpace before it
// learned conditional spaces (sha256 of run's schedule, first 8 bytes):
// an unconditional space must keep every decision, so that no revision
// bump is needed.
var tpeUnconditionalPins = map[string]string{
	"defaults/40x8":       "c7e9ae0b006b6418",
	"defaults/60x1":       "f23251d27cb7bf49",
	"multivariate/40x8":   "c95d2840d42b65ae",
	"no-liar/30x3":        "7beec8799ccc3f7c",
	"history+points/30x4": "d2b259953364ab59",
}

func tpePinConfigs() map[string]Config {
	no := false
	hist := []Observation{
		{Params: Params{"lr": Float(1e-3), "dropout": Float(0.1), "layers": Float(3), "width": Float(64), "opt": String("adam")}, Metric: 0.2},
		{Params: Params{"lr": Float(0.1), "dropout": Float(0.4), "layers": Float(7), "width": Float(512), "opt": String("sgd")}, Metric: 1.5, Stopped: true},
	}
	cfgs := map[string]Config{
		"defaults/40x8":       tpeConfig(42, 40, 8, nil),
		"defaults/60x1":       tpeConfig(7, 60, 1, &TPESettings{NStartupTrials: 5}),
		"multivariate/40x8":   tpeConfig(42, 40, 8, &TPESettings{Multivariate: true, NStartupTrials: 4}),
		"no-liar/30x3":        tpeConfig(3, 30, 3, &TPESettings{ConstantLiar: &no, NStartupTrials: 3}),
		"history+points/30x4": tpeConfig(9, 30, 4, &TPESettings{NStartupTrials: 2}),
	}
	c := cfgs["history+points/30x4"]
	c.History = hist
	c.Points = []Params{{"lr": Float(1e-2), "dropout": Float(0), "layers": Float(2), "width": Float(32), "opt": String("sgd")}}
	cfgs["history+points/30x4"] = c
	return cfgs
}

func TestTPEUnconditionalKeepsItsDecisions(t *testing.T) {
	for name, cfg := range tpePinConfigs() {
		sched, _ := run(t, cfg, testScript)
		got := fmt.Sprintf("%x", sha256.Sum256([]byte(sched)))[:16]
		if want := tpeUnconditionalPins[name]; got != want {
			t.Errorf("%s: schedule %s, want %s (before conditional spaces)", name, got, want)
		}
	}
}

// TPE on a conditional space proposes exactly the active parameters and
// no forbidden configuration, in every mode, with a warm start whose
// trials lack the inactive parameters and with few observations kept
// (so that forgetting reindexes which are active); the harness restores
// it from its snapshot after every event.
func TestTPEConditional(t *testing.T) {
	no := false
	forbid := []Forbidden{{All: []Condition{{"optimizer", []string{"sgd"}}, {"n_layers", []string{"3"}}}}}
	hist := []Observation{
		{Params: Params{"optimizer": String("sgd"), "lr": Float(1e-2), "momentum": Float(0.9), "n_layers": Float(2), "width_2": Float(64)}, Metric: 0.2},
		{Params: Params{"optimizer": String("adam"), "lr": Float(1e-3), "beta1": Float(0.9), "beta2": String("0.999"), "n_layers": Float(1)}, Metric: 1.5},
		{Params: Params{"optimizer": String("adam"), "lr": Float(1), "n_layers": Float(1)}, Metric: 3}, // not in the space: ignored
	}
	for name, s := range map[string]*TPESettings{
		"defaults":     {NStartupTrials: 5},
		"multivariate": {NStartupTrials: 5, Multivariate: true},
		"group":        {NStartupTrials: 5, Multivariate: true, Group: true},
		"no-liar":      {NStartupTrials: 3, ConstantLiar: &no},
		"forgetting":   {NStartupTrials: 3, GammaMax: 4, MaxObservations: 12},
	} {
		for _, f := range [][]Forbidden{nil, forbid} {
			t.Run(fmt.Sprintf("%s/forbidden=%d", name, len(f)), func(t *testing.T) {
				cfg := Config{Algorithm: AlgorithmTPE, Space: condSpace(), Forbidden: f, Seed: 42, MaxTrials: 80, MaxConcurrent: 4,
					Mode: "min", History: hist, Settings: Settings{TPE: s}}
				sched, created := run(t, cfg, condScript)
				if again, _ := run(t, cfg, condScript); again != sched {
					t.Error("same seed, different schedules")
				}
				sets := map[string]bool{}
				for _, c := range created {
					checkCondParams(t, c.Params)
					if len(f) > 0 && f[0].Forbids(cfg.Space, c.Params) {
						t.Errorf("%s: forbidden %v", c.ID, c.Params)
					}
					sets[strings.Join(c.Params.Names(), ",")] = true
				}
				if len(sets) < 3 {
					t.Errorf("%d sets of active parameters: %v", len(sets), sets)
				}
			})
		}
	}
}

// Restored mid-search from its snapshot, TPE on a conditional space goes
// on exactly as the searcher that was never stopped.
func TestTPEConditionalRestoreMidSearch(t *testing.T) {
	for _, s := range []TPESettings{{}, {Multivariate: true}, {Multivariate: true, Group: true}} {
		s.NStartupTrials = 6
		cfg := Config{Algorithm: AlgorithmTPE, Space: condSpace(), Seed: 3, MaxTrials: 60, MaxConcurrent: 5, Mode: "min",
			Settings: Settings{TPE: &s}}
		f := func(p Params) float64 { return condScript(p).Score }
		plain, restored := drive(t, cfg, f, false), drive(t, cfg, f, true)
		if got, want := fmt.Sprint(restored.rows), fmt.Sprint(plain.rows); got != want {
			t.Errorf("%+v: restored after every event, the proposals differ:\n%s\n%s", s, got, want)
		}
	}
}

// A conditional parameter's l and g are fitted on the trials where it is
// active, as Optuna 3.1's sample_independent masks them: the split into
// below and above is over every trial, then each side keeps those that
// have the parameter, weighed by age among themselves.
func TestTPEConditionalSplitMasksAsOptuna(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmTPE, Space: condSpace(), Seed: 1, MaxTrials: 100, MaxConcurrent: 1, Mode: "min"}
	tp := newTPE(cfg)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 60 {
		p := cfg.Space.Sample(rng)
		tp.observe(tp.row(p), condScript(p).Score, false, i)
	}
	pend := cfg.Space.Sample(rng)
	tp.st.Pending = [][]float64{tp.row(pend)}
	tp.split()
	tp.splitLiars()
	all := tp.scr.tpeSplit
	mom := cfg.Space.Index("momentum")
	sp := tp.splitFor(mom)
	var below, above []int32
	for i, r := range tp.st.Observed {
		if r[0] != 0 { // optimizer index 0 is sgd, the only one with momentum
			continue
		}
		if all.inBelow[i] {
			below = append(below, int32(i))
		} else {
			above = append(above, int32(i))
		}
	}
	if !slices.Equal(sp.below, below) {
		t.Errorf("l's observations %v, want the sgd ones of the global below %v", sp.below, below)
	}
	liars := 0
	if pend["optimizer"].Str == "sgd" {
		liars = 1
	}
	if len(sp.liars) != liars || sp.ng != len(above)+liars {
		t.Errorf("g: %d liars of %d observations, want %d of %d", len(sp.liars), sp.ng, liars, len(above)+liars)
	}
	for b := range sp.below {
		if sp.wl[b] != defaultWeight(b, len(below)) {
			t.Errorf("wl[%d] = %v, want %v", b, sp.wl[b], defaultWeight(b, len(below)))
		}
	}
	for k, i := range above {
		if sp.wg[i] != defaultWeight(k, sp.ng) {
			t.Errorf("wg[%d] = %v, want %v", i, sp.wg[i], defaultWeight(k, sp.ng))
		}
	}
	for i, w := range sp.wg {
		if tp.st.Observed[i][0] != 0 && w != 0 {
			t.Errorf("wg[%d] = %v for an observation without momentum", i, w)
		}
	}
}
