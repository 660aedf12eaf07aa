package hpo

import (
	"crypto/sha256"
	"fmt"
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
