package sim

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// idleScenario: nodes a–e idle from t = 0; the batch scheduler takes a
// back at 100, b and e at 250, c at 400 and a (idle again from 300) at
// 500; d is never taken back. The window ends at 350, so c's and a's second
// holes end after it: only the events beyond End tell when. Two jobs
// that never finish keep the allocator deciding at 0, 100, 250 and 300.
func idleScenario() ([]Event, []Job, Config) {
	events := []Event{
		{Time: 0, Idle: []string{"a", "b", "c", "d", "e"}},
		{Time: 100, Busy: []string{"a"}},
		{Time: 250, Busy: []string{"b", "e"}},
		{Time: 300, Idle: []string{"a"}},
		{Time: 400, Busy: []string{"c"}},
		{Time: 500, Busy: []string{"a"}},
	}
	curve := allocator.Curve{{Nodes: 1, Throughput: 10}, {Nodes: 4, Throughput: 36}}
	jobs := []Job{
		{Name: "A", MinNodes: 1, MaxNodes: 4, RescaleUp: 8, RescaleDown: 5, TotalSamples: 1e9, Curve: curve},
		{Name: "B", MinNodes: 1, MaxNodes: 4, RescaleUp: 8, RescaleDown: 5, TotalSamples: 1e9, Curve: curve},
	}
	return events, jobs, Config{Start: 0, End: 350}
}

// seenProblem is what the allocator was given at one decision.
type seenProblem struct {
	now       float64
	nodes     []allocator.Node
	lookahead time.Duration
}

// runSeeing runs cfg and returns the metrics and every problem solved.
func runSeeing(t *testing.T, events []Event, jobs []Job, cfg Config) (Metrics, []seenProblem) {
	t.Helper()
	var seen []seenProblem
	cfg.observeProblem = func(now float64, p *allocator.Problem) {
		seen = append(seen, seenProblem{now: now, nodes: slices.Clone(p.Nodes), lookahead: p.Lookahead})
	}
	res, err := Run(events, jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res.Metrics, seen
}

// trueEnd is the oracle: the first busy event after now that names id
// (a node idle at now stays idle until then); zero when none does.
func trueEnd(events []Event, id string, now float64) time.Time {
	for _, ev := range events {
		if ev.Time > now && slices.Contains(ev.Busy, id) {
			return simTime(ev.Time)
		}
	}
	return time.Time{}
}

func TestIdleEstimateModes(t *testing.T) {
	events, jobs, base := idleScenario()
	decisions := []float64{0, 100, 250, 300}
	times := func(seen []seenProblem) []float64 {
		var out []float64
		for _, s := range seen {
			out = append(out, s.now)
		}
		return out
	}

	t.Run("none tells nothing, and derived T_fwd falls back", func(t *testing.T) {
		for _, derive := range []bool{false, true} {
			cfg := base
			cfg.DeriveLookahead = derive
			_, seen := runSeeing(t, events, jobs, cfg)
			if got := times(seen); !slices.Equal(got, decisions) {
				t.Fatalf("derive=%v: decisions at %v, want %v", derive, got, decisions)
			}
			for _, s := range seen {
				for _, n := range s.nodes {
					if !n.IdleUntil.IsZero() {
						t.Errorf("derive=%v, t=%v: node %s has IdleUntil %v", derive, s.now, n.ID, n.IdleUntil)
					}
				}
				if s.lookahead != DefaultLookahead*time.Second {
					t.Errorf("derive=%v, t=%v: T_fwd %v, want the fixed %d s", derive, s.now, s.lookahead, DefaultLookahead)
				}
			}
		}
	})

	t.Run("true is the trace's truth, beyond End too", func(t *testing.T) {
		cfg := base
		cfg.IdleEstimate = IdleEstimate{Mode: IdleEstimateTrue}
		_, seen := runSeeing(t, events, jobs, cfg)
		for _, s := range seen {
			now := s.now
			for _, n := range s.nodes {
				if want := trueEnd(events, n.ID, now); !n.IdleUntil.Equal(want) {
					t.Errorf("t=%v: node %s IdleUntil %v, want %v", now, n.ID, n.IdleUntil, want)
				}
			}
			if s.lookahead != DefaultLookahead*time.Second {
				t.Errorf("t=%v: fixed T_fwd %v", now, s.lookahead)
			}
		}
	})

	// Hand-solved lower medians of the remaining idle times (d: ∞):
	//	t=0:   a 100, b 250, e 250, c 400, d ∞  → 250 s
	//	t=100: b 150, e 150, c 300, d ∞         → 150 s
	//	t=250: c 150, d ∞                       → 150 s
	//	t=300: c 100, a 200, d ∞                → 200 s
	t.Run("derived T_fwd from the truth", func(t *testing.T) {
		cfg := base
		cfg.IdleEstimate = IdleEstimate{Mode: IdleEstimateTrue}
		cfg.DeriveLookahead = true
		m, seen := runSeeing(t, events, jobs, cfg)
		var got []time.Duration
		for _, s := range seen {
			got = append(got, s.lookahead)
		}
		want := []time.Duration{250 * time.Second, 150 * time.Second, 150 * time.Second, 200 * time.Second}
		if !slices.Equal(got, want) {
			t.Errorf("T_fwd per decision %v, want %v", got, want)
		}
		near(t, "lookahead p10", m.LookaheadP10, 150)
		near(t, "lookahead p50", m.LookaheadP50, 150)
		near(t, "lookahead p90", m.LookaheadP90, 250)
	})

	t.Run("noisy: seeded, one factor per busy event, sigma 0 is the truth", func(t *testing.T) {
		noisy := func(sigma float64, seed uint64) (Metrics, []seenProblem) {
			cfg := base
			cfg.IdleEstimate = IdleEstimate{Mode: IdleEstimateNoisy, Sigma: sigma, Seed: seed}
			cfg.DeriveLookahead = true
			return runSeeing(t, events, jobs, cfg)
		}
		m1, s1 := noisy(1, 7)
		m2, s2 := noisy(1, 7)
		if !reflect.DeepEqual(s1, s2) || !sameOutcome(m1, m2) {
			t.Error("same seed, different estimates or outcome")
		}
		_, s3 := noisy(1, 8)
		if reflect.DeepEqual(s1, s3) {
			t.Error("another seed gave the same estimates")
		}
		// One factor per busy event: (IdleUntil − now) / (end − now) is
		// the same for every node it takes back (b and e) and at every
		// decision; and not 1 at sigma 1.
		factors := map[string][]float64{}
		for _, s := range s1 {
			now := s.now
			for _, n := range s.nodes {
				end := trueEnd(events, n.ID, now)
				if end.IsZero() {
					if !n.IdleUntil.IsZero() {
						t.Errorf("t=%v: node %s has no end, yet IdleUntil %v", now, n.ID, n.IdleUntil)
					}
					continue
				}
				key := end.String()
				f := n.IdleUntil.Sub(simTime(now)).Seconds() / end.Sub(simTime(now)).Seconds()
				factors[key] = append(factors[key], f)
			}
		}
		if len(factors) != 4 {
			t.Errorf("estimates for %d busy events, want 4 (at 100, 250, 400, 500)", len(factors))
		}
		for end, fs := range factors {
			for _, f := range fs {
				if math.Abs(f-fs[0]) > 1e-6 || math.Abs(f-1) < 1e-3 || f <= 0 {
					t.Errorf("busy event at %s: factors %v: want one positive factor, not 1", end, fs)
					break
				}
			}
		}
		_, s0 := noisy(0, 7)
		cfg := base
		cfg.IdleEstimate = IdleEstimate{Mode: IdleEstimateTrue}
		cfg.DeriveLookahead = true
		_, st := runSeeing(t, events, jobs, cfg)
		if !reflect.DeepEqual(s0, st) {
			t.Error("noisy with sigma 0 differs from the truth")
		}
	})
}

// sameOutcome compares everything a run decides (not its solver times).
func sameOutcome(a, b Metrics) bool {
	for _, m := range []*Metrics{&a, &b} {
		m.SolverMsP50, m.SolverMsP99, m.SolverMsMax, m.SolverMsTotal = 0, 0, 0, 0
	}
	return a == b
}

// The default (T_fwd fixed, no estimates) is what every run did before
// estimates existed; with no estimate a derived T_fwd is the fixed one.
func TestIdleEstimateDefaultUnchanged(t *testing.T) {
	events, jobs, cfg := idleScenario()
	plain, err := Run(events, jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.IdleEstimate = IdleEstimate{Mode: IdleEstimateNone}
	cfg.DeriveLookahead = true
	derived, err := Run(events, jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !sameOutcome(plain.Metrics, derived.Metrics) {
		t.Errorf("none + derived T_fwd changed the run:\n%+v\n%+v", plain.Metrics, derived.Metrics)
	}
	near(t, "lookahead p50", plain.Metrics.LookaheadP50, DefaultLookahead)
}

func TestIdleEstimateValidation(t *testing.T) {
	events, jobs, base := idleScenario()
	for _, c := range []struct {
		ie   IdleEstimate
		want string
	}{
		{IdleEstimate{Mode: "psychic"}, `IdleEstimate.Mode: "psychic" is not one of none, true, noisy`},
		{IdleEstimate{Mode: IdleEstimateNoisy, Sigma: -1}, "IdleEstimate.Sigma: -1"},
		{IdleEstimate{Mode: IdleEstimateNoisy, Sigma: math.NaN()}, "IdleEstimate.Sigma: NaN"},
		{IdleEstimate{Mode: IdleEstimateTrue, Sigma: 0.5}, "IdleEstimate.Sigma: 0.5 is only for mode noisy"},
	} {
		cfg := base
		cfg.IdleEstimate = c.ie
		_, err := Run(events, jobs, cfg)
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want ErrInvalidInput naming %q", c.ie, err, c.want)
		}
	}
}

func TestIdleEstimateString(t *testing.T) {
	for ie, want := range map[IdleEstimate]string{
		{}:                                    "none",
		{Mode: IdleEstimateNone}:              "none",
		{Mode: IdleEstimateTrue}:              "true",
		{Mode: IdleEstimateNoisy, Sigma: 0.5}: "noisy:0.5",
	} {
		if got := ie.String(); got != want {
			t.Errorf("%+v: %q, want %q", ie, got, want)
		}
	}
}
