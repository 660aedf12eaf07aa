package hpo

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// benchConditionalSpace is internal/searchbench's conditional problem's
// space (conditionalSpace), which hpo's tests cannot import: searchbench
// links nas, whose init changes what architecture spaces validate.
// searchbench's TestConditionalSpaceFingerprint pins the same hash of
// its own, benchConditionalSpaceSHA, so that the two stay one space.
func benchConditionalSpace() Space {
	when := func(opt string) *Condition { return &Condition{Param: "optimizer", Values: []string{opt}} }
	return Space{
		{Name: "optimizer", Type: ParamChoice, Choices: []string{"sgd", "adam", "rmsprop"}},
		{Name: "sgd_lr", Type: ParamFloat, Min: 1e-4, Max: 1, Log: true, When: when("sgd")},
		{Name: "momentum", Type: ParamFloat, Min: 0, Max: 0.99, When: when("sgd")},
		{Name: "adam_lr", Type: ParamFloat, Min: 1e-5, Max: 0.1, Log: true, When: when("adam")},
		{Name: "beta1", Type: ParamFloat, Min: 0.5, Max: 0.99, When: when("adam")},
		{Name: "eps", Type: ParamFloat, Min: 1e-10, Max: 1e-3, Log: true, When: when("adam")},
		{Name: "rmsprop_lr", Type: ParamFloat, Min: 1e-5, Max: 0.1, Log: true, When: when("rmsprop")},
		{Name: "alpha", Type: ParamFloat, Min: 0.8, Max: 0.999, When: when("rmsprop")},
		{Name: "weight_decay", Type: ParamFloat, Min: 1e-6, Max: 0.1, Log: true},
		{Name: "batch_size", Type: ParamInt, Min: 16, Max: 1024, Log: true},
	}
}

// benchConditionalSpaceSHA is the first 8 bytes of the sha256 of
// benchConditionalSpace's JSON, in hex.
const benchConditionalSpaceSHA = "e705c75237c1f658"

func TestBenchConditionalSpaceFingerprint(t *testing.T) {
	b, err := json.Marshal(benchConditionalSpace())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(b))[:16]; got != benchConditionalSpaceSHA {
		t.Errorf("fingerprint %s, want %s (searchbench's conditional space)", got, benchConditionalSpaceSHA)
	}
}

// tpeGroupNames are group mode's groups after cfg.History: each group's
// parameter names in space order.
func tpeGroupNames(cfg Config) [][]string {
	var out [][]string
	for _, g := range newTPE(cfg).groups() {
		var names []string
		for _, dm := range g.dims {
			names = append(names, dm.Name)
		}
		out = append(out, names)
	}
	return out
}

// optunaGroups is Optuna 3.1's _SearchSpaceGroup.add_distributions
// (optuna/samplers/_search_space/group_decomposed.py), line for line, on
// each trial's parameter names: the oracle for group-mode TPE's groups.
func optunaGroups(trials [][]string) [][]string {
	var spaces [][]string
	for _, names := range trials {
		dist := slices.Clone(names)
		var next [][]string
		for _, keys := range spaces {
			var both, only []string
			for _, k := range keys {
				if slices.Contains(dist, k) {
					both = append(both, k)
				} else {
					only = append(only, k)
				}
			}
			next = append(next, both, only)
			dist = slices.DeleteFunc(dist, func(n string) bool { return slices.Contains(keys, n) })
		}
		next = append(next, dist)
		spaces = slices.DeleteFunc(next, func(s []string) bool { return len(s) == 0 })
	}
	return spaces
}

// canonical sorts each group and the groups, so that partitions compare
// as sets of sets.
func canonical(groups [][]string) string {
	var out []string
	for _, g := range groups {
		g = slices.Clone(g)
		slices.Sort(g)
		out = append(out, strings.Join(g, ","))
	}
	slices.Sort(out)
	return strings.Join(out, " | ")
}

// On the conditional benchmark's space (internal/searchbench), group-mode
// TPE's groups are Optuna's: the shared parameters with the optimiser,
// then one group per optimiser's own, for every optimiser some trial
// chose; with trials of one optimiser only, its parameters join the
// shared ones and the others are in no group (proposed on their own, as
// Optuna's sample_independent). Trials are random samples, as TPE's
// startup trials are.
func TestTPEGroupsAsOptuna(t *testing.T) {
	space := benchConditionalSpace()
	rng := rand.New(rand.NewPCG(1, 2))
	sample := func(n int, keep func(Params) bool) []Observation {
		var h []Observation
		for len(h) < n {
			if p := space.Sample(rng); keep(p) {
				h = append(h, Observation{Params: p, Metric: rng.Float64(), Stopped: len(h)%5 == 4})
			}
		}
		return h
	}
	all := func(Params) bool { return true }
	only := func(opt string) func(Params) bool {
		return func(p Params) bool { return p["optimizer"].Str == opt }
	}
	for _, tc := range []struct {
		name    string
		history []Observation
		want    string
	}{
		{"random", sample(30, all), "adam_lr,beta1,eps | alpha,rmsprop_lr | batch_size,optimizer,weight_decay | momentum,sgd_lr"},
		{"sgd only", sample(12, only("sgd")), "batch_size,momentum,optimizer,sgd_lr,weight_decay"},
		{"no rmsprop", append(sample(6, only("sgd")), sample(6, only("adam"))...), "adam_lr,beta1,eps | batch_size,optimizer,weight_decay | momentum,sgd_lr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var trials [][]string
			for _, o := range tc.history {
				trials = append(trials, o.Params.Names())
			}
			cfg := Config{Algorithm: AlgorithmTPE, Space: space, Seed: 1, MaxTrials: 100, MaxConcurrent: 1, Mode: "min",
				History: tc.history, Settings: Settings{TPE: &TPESettings{Multivariate: true, Group: true}}}
			got := tpeGroupNames(cfg)
			if c := canonical(got); c != tc.want {
				t.Errorf("groups %s, want %s", c, tc.want)
			}
			if c, o := canonical(got), canonical(optunaGroups(trials)); c != o {
				t.Errorf("groups %s, Optuna's %s", c, o)
			}
			for _, g := range got {
				if !slices.IsSortedFunc(g, func(a, b string) int { return space.Index(a) - space.Index(b) }) {
					t.Errorf("group %v not in space order", g)
				}
			}
		})
	}
}

// On a space without conditions there is one group, every parameter:
// group mode decides exactly as multivariate alone.
func TestTPEGroupWithoutConditionsIsMultivariate(t *testing.T) {
	space := Space{
		{Name: "lr", Type: ParamFloat, Min: 1e-4, Max: 1, Log: true},
		{Name: "layers", Type: ParamInt, Min: 1, Max: 8},
		{Name: "opt", Type: ParamChoice, Choices: []string{"adam", "sgd"}},
	}
	schedule := func(group bool) string {
		cfg := Config{Algorithm: AlgorithmTPE, Space: space, Seed: 5, MaxTrials: 30, MaxConcurrent: 3, Mode: "min",
			Settings: Settings{TPE: &TPESettings{Multivariate: true, Group: group, NStartupTrials: 4}}}
		s, err := NewSearcher(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		queue := s.Initial()
		for n := 0; len(queue) > 0; n++ {
			a := queue[0]
			queue = queue[1:]
			c, ok := a.(Create)
			if !ok {
				continue
			}
			fmt.Fprintln(&b, c.Params)
			queue = append(queue, s.TrialFinished(c.ID, float64(n%7)+c.Params["lr"].Num, OutcomeCompleted)...)
		}
		return b.String()
	}
	if mv, g := schedule(false), schedule(true); mv != g {
		t.Errorf("group mode on an unconditional space:\n%s\nmultivariate:\n%s", g, mv)
	}
}
