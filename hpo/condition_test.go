package hpo

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func when(parent string, values ...string) *Condition {
	return &Condition{Param: parent, Values: values}
}

// condSpace is the conditional space the searchers' tests share: momentum
// only with sgd, beta1 and beta2 only with adam, width_2 with two or three
// layers, width_3 with three.
func condSpace() Space {
	return Space{
		{Name: "optimizer", Type: ParamChoice, Choices: []string{"sgd", "adam"}},
		{Name: "lr", Type: ParamFloat, Min: 1e-4, Max: 1, Log: true},
		{Name: "momentum", Type: ParamFloat, Min: 0, Max: 0.99, When: when("optimizer", "sgd")},
		{Name: "beta1", Type: ParamFloat, Min: 0.8, Max: 0.999, When: when("optimizer", "adam")},
		{Name: "beta2", Type: ParamChoice, Choices: []string{"0.99", "0.999"}, When: when("optimizer", "adam")},
		{Name: "n_layers", Type: ParamInt, Min: 1, Max: 3},
		{Name: "width_2", Type: ParamInt, Min: 16, Max: 256, Log: true, When: when("n_layers", "2", "3")},
		{Name: "width_3", Type: ParamInt, Min: 16, Max: 256, Log: true, When: when("n_layers", "3")},
	}
}

// condWant is the set of parameter names condSpace says are active in p,
// written out by hand: the oracle for Active, Sample and the searchers.
func condWant(p Params) []string {
	names := []string{"lr", "n_layers", "optimizer"}
	switch p["optimizer"].Str {
	case "sgd":
		names = append(names, "momentum")
	case "adam":
		names = append(names, "beta1", "beta2")
	}
	switch p["n_layers"].Num {
	case 3:
		names = append(names, "width_3")
		fallthrough
	case 2:
		names = append(names, "width_2")
	}
	slices.Sort(names)
	return names
}

// checkCondParams fails unless p has exactly condSpace's active names.
func checkCondParams(t *testing.T, p Params) {
	t.Helper()
	if got, want := p.Names(), condWant(p); !slices.Equal(got, want) {
		t.Fatalf("params %v: names %v, want %v", p, got, want)
	}
	if err := condSpace().Contains(p); err != nil {
		t.Fatal(err)
	}
}

func TestConditionValidateNamesTheField(t *testing.T) {
	base := Space{
		{Name: "opt", Type: ParamChoice, Choices: []string{"sgd", "adam"}},
		{Name: "n", Type: ParamInt, Min: 1, Max: 3},
		{Name: "lr", Type: ParamFloat, Min: 0, Max: 1},
	}
	for _, tc := range []struct {
		when *Condition
		want string
	}{
		{when("opt", "sgd"), ""},
		{when("n", "2", "3.0", "1e0"), ""},
		{when("", "sgd"), "space[3].when.param: empty"},
		{when("nope", "sgd"), `space[3].when.param: "nope" is not a parameter of the space`},
		{when("late", "x"), `space[3].when.param: "late" is defined after "x"; define a parent before`},
		{when("x", "x"), `space[3].when.param: "x" cannot depend on itself`},
		{when("lr", "0.5"), `space[3].when.param: "lr" is of type float; only a choice or an int parameter`},
		{when("opt"), `space[3].when.values: empty`},
		{when("opt", "sgd", "rmsprop"), `space[3].when.values[1]: "rmsprop" is not one of "opt"'s choices [sgd adam]`},
		{when("n", "4"), `space[3].when.values[0]: "4" is not an integer of "n"'s range [1, 3]`},
		{when("n", "1.5"), `space[3].when.values[0]: "1.5" is not an integer`},
		{when("n", "two"), `space[3].when.values[0]: "two" is not an integer`},
	} {
		s := append(slices.Clone(base),
			Param{Name: "x", Type: ParamFloat, Min: 0, Max: 1, When: tc.when},
			Param{Name: "late", Type: ParamChoice, Choices: []string{"x"}})
		err := s.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.when, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want %q", tc.when, err, tc.want)
		}
	}
}

func TestActiveFollowsChains(t *testing.T) {
	s := Space{
		{Name: "opt", Type: ParamChoice, Choices: []string{"sgd", "adam"}},
		{Name: "schedule", Type: ParamChoice, Choices: []string{"step", "cosine"}, When: when("opt", "sgd")},
		{Name: "gamma", Type: ParamFloat, Min: 0.1, Max: 0.9, When: when("schedule", "step")},
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    Params
		want []bool
	}{
		{Params{"opt": String("sgd"), "schedule": String("step")}, []bool{true, true, true}},
		{Params{"opt": String("sgd"), "schedule": String("cosine")}, []bool{true, true, false}},
		// schedule's value is left over, but schedule is inactive: so is gamma.
		{Params{"opt": String("adam"), "schedule": String("step")}, []bool{true, false, false}},
		{Params{}, []bool{true, false, false}},
	} {
		if got := s.Active(tc.p); !slices.Equal(got, tc.want) {
			t.Errorf("Active(%v) = %v, want %v", tc.p, got, tc.want)
		}
		for i := range s {
			if got := s.IsActive(i, tc.p); got != tc.want[i] {
				t.Errorf("IsActive(%d, %v) = %v, want %v", i, tc.p, got, tc.want[i])
			}
		}
	}
	p := s.Prune(Params{"opt": String("adam"), "schedule": String("step"), "gamma": Float(0.5), "other": Float(1)})
	if got := p.Names(); !slices.Equal(got, []string{"opt"}) {
		t.Errorf("Prune kept %v, want [opt]", got)
	}
}

func TestContainsExactlyTheActive(t *testing.T) {
	s := condSpace()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	ok := Params{"optimizer": String("sgd"), "lr": Float(0.01), "momentum": Float(0.9), "n_layers": Float(2), "width_2": Float(64)}
	if err := s.Contains(ok); err != nil {
		t.Fatal(err)
	}
	with := func(k string, v *Value) Params {
		p := Params{}
		for n, x := range ok {
			p[n] = x
		}
		if v == nil {
			delete(p, k)
		} else {
			p[k] = *v
		}
		return p
	}
	b1, w3, three, zz := Float(0.9), Float(32), Float(3), Float(1)
	for _, tc := range []struct {
		p    Params
		want string
	}{
		{with("beta1", &b1), `params: "beta1" has a value, but is inactive (active when optimizer = adam)`},
		{with("width_3", &w3), `params: "width_3" has a value, but is inactive (active when n_layers = 3)`},
		{with("momentum", nil), `params: "momentum" missing (active, as optimizer = sgd)`},
		{with("n_layers", &three), `params: "width_3" missing (active, as n_layers = 3)`},
		{with("lr", nil), `params: "lr" missing`},
		{with("zz", &zz), `params: "zz" is not a parameter of the space`},
	} {
		if err := s.Contains(tc.p); err == nil || err.Error() != tc.want {
			t.Errorf("Contains(%v) = %v, want %q", tc.p, err, tc.want)
		}
	}
}

func TestSampleConditional(t *testing.T) {
	s := condSpace()
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]int{}
	for range 2000 {
		p := s.Sample(rng)
		checkCondParams(t, p)
		seen[strings.Join(p.Names(), ",")]++
	}
	if len(seen) != 6 { // 2 optimizers × 3 layer counts
		t.Errorf("%d sets of active parameters, want 6: %v", len(seen), seen)
	}
}

func TestComplete(t *testing.T) {
	s := condSpace()
	rng := rand.New(rand.NewPCG(3, 4))
	// The optimizer and the layer count changed: momentum and width_3 go,
	// beta1, beta2 and width_2 come; lr is kept.
	p := Params{"optimizer": String("adam"), "lr": Float(0.01), "momentum": Float(0.9), "n_layers": Float(2), "width_3": Float(64)}
	q := s.Complete(rng, p)
	checkCondParams(t, q)
	if q["lr"].Num != 0.01 || q["optimizer"].Str != "adam" || q["n_layers"].Num != 2 {
		t.Errorf("Complete changed an active value: %v", q)
	}
	if _, ok := p["beta1"]; ok {
		t.Error("Complete changed its argument")
	}
	// On an unconditional space with every value there, it draws nothing.
	u, before := testSpace(), *rng
	full := u.Sample(rand.New(rand.NewPCG(5, 6)))
	if got := u.Complete(rng, full); u.Contains(got) != nil || *rng != before {
		t.Error("Complete of a full point drew from the RNG or lost values")
	}
}

func TestForbidden(t *testing.T) {
	s := condSpace()
	f := []Forbidden{{All: []Condition{{"optimizer", []string{"sgd"}}, {"n_layers", []string{"3"}}}}}
	if err := ValidateForbidden(s, f); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		p, err := s.SampleAllowed(rng, f)
		if err != nil {
			t.Fatal(err)
		}
		if p["optimizer"].Str == "sgd" && p["n_layers"].Num == 3 {
			t.Fatalf("forbidden %v drawn", p)
		}
	}
	// A term on an inactive parameter does not hold.
	g := Forbidden{All: []Condition{{"width_3", []string{"16"}}}}
	if g.Forbids(s, Params{"optimizer": String("sgd"), "n_layers": Float(1)}) {
		t.Error("a clause on an inactive parameter forbade")
	}
	// Everything forbidden: an error, not a forbidden point.
	all := []Forbidden{{All: []Condition{{"optimizer", []string{"sgd", "adam"}}}}}
	if _, err := s.SampleAllowed(rng, all); !errors.Is(err, ErrAllForbidden) {
		t.Errorf("all forbidden: %v, want ErrAllForbidden", err)
	}
	for _, tc := range []struct {
		f    Forbidden
		want string
	}{
		{Forbidden{}, "forbidden[0].all: empty"},
		{Forbidden{All: []Condition{{"optimizer", []string{"sgd"}}, {"lr", []string{"0.1"}}}}, `forbidden[0].all[1].param: "lr" is of type float`},
		{Forbidden{All: []Condition{{"optimizer", []string{"rmsprop"}}}}, `forbidden[0].all[0].values[0]: "rmsprop" is not one of`},
		{Forbidden{All: []Condition{{"nope", []string{"x"}}}}, `forbidden[0].all[0].param: "nope" is not a parameter`},
	} {
		if err := ValidateForbidden(s, []Forbidden{tc.f}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.f, err, tc.want)
		}
	}
}
