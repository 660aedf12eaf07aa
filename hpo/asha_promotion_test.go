package hpo

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func promotionConfig(maxTrials, maxConcurrent int, set ASHASettings) Config {
	set.Variant = VariantPromotion
	return Config{Algorithm: AlgorithmASHA, Space: testSpace(), Seed: 42, MaxTrials: maxTrials, MaxConcurrent: maxConcurrent, Mode: "min",
		Settings: Settings{ASHA: &set}}
}

// jobs spells actions out without parameters: what Algorithm 2 decides.
func jobs(acts []Action) string {
	var s []string
	for _, a := range acts {
		switch a := a.(type) {
		case Create:
			s = append(s, fmt.Sprintf("create %s %g %q", a.ID, a.Budget, a.Stage))
		case Continue:
			s = append(s, fmt.Sprintf("continue %s %g %q", a.TrialID, a.Budget, a.Stage))
		default:
			s = append(s, fmt.Sprint(a))
		}
	}
	return strings.Join(s, "; ")
}

// Algorithm 2 by hand, one slot (so every free slot is one event): rungs
// at 1, 3 and 9 with η = 3; a rung promotes from its top ⌊n/3⌋ the best
// trial not yet promoted, the higher rung first, and creates otherwise.
func TestASHAPromotionByHand(t *testing.T) {
	s, err := NewSearcher(promotionConfig(6, 1, ASHASettings{MinBudget: 1, ReductionFactor: 3, MaxBudget: 9}))
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string, acts []Action, want string) {
		t.Helper()
		if got := jobs(acts); got != want {
			t.Fatalf("%s: %s, want %s", what, got, want)
		}
	}
	step("initial", s.Initial(), `create t00001 1 "rung 0"`)
	step("t1 at rung 0: 5", s.TrialFinished("t00001", 5, OutcomeCompleted), `create t00002 1 "rung 0"`) // n0 = 1: top 0
	step("t2 at rung 0: 3", s.TrialFinished("t00002", 3, OutcomeCompleted), `create t00003 1 "rung 0"`) // n0 = 2: top 0
	step("t3 at rung 0: 4", s.TrialFinished("t00003", 4, OutcomeCompleted), `continue t00002 3 "rung 1"`)
	step("t2 at rung 1: 2.5", s.TrialFinished("t00002", 2.5, OutcomeCompleted), `create t00004 1 "rung 0"`) // rung 0's top 1 (t2) promoted
	step("t4 at rung 0: 1", s.TrialFinished("t00004", 1, OutcomeCompleted), `continue t00004 3 "rung 1"`)   // n0 = 4: top 1 is t4
	step("t4 at rung 1: 0.5", s.TrialFinished("t00004", 0.5, OutcomeCompleted), `create t00005 1 "rung 0"`)
	step("t5 at rung 0: 6", s.TrialFinished("t00005", 6, OutcomeCompleted), `create t00006 1 "rung 0"`)   // n0 = 5: top 1, t4, promoted
	step("t6 at rung 0: 2", s.TrialFinished("t00006", 2, OutcomeCompleted), `continue t00006 3 "rung 1"`) // n0 = 6: top 2 = t4, t6
	// n1 = 3: rung 1's top 1 is t4 (0.5), above t6's 0.7: the higher rung first.
	step("t6 at rung 1: 0.7", s.TrialFinished("t00006", 0.7, OutcomeCompleted), `continue t00004 9 "rung 2"`)
	// Max_trials created, nothing left to promote: done.
	step("t4 at rung 2: 0.1", s.TrialFinished("t00004", 0.1, OutcomeCompleted), "shutdown")
	if p := s.Progress(); p != 1 {
		t.Errorf("progress %v at shutdown", p)
	}
}

// Failed, stopped and metric-less trials are recorded nowhere: they count
// toward no rung and are never promoted. With mode max, higher is better.
func TestASHAPromotionRecordsOnlyCompletedRuns(t *testing.T) {
	cfg := promotionConfig(5, 1, ASHASettings{MinBudget: 1, ReductionFactor: 2, MaxBudget: 4})
	cfg.Mode = "max"
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Initial()
	got := []string{
		jobs(s.TrialFailed("t00001")),
		jobs(s.TrialFinished("t00002", 0.9, OutcomeStopped)),
		jobs(s.TrialFinished("t00003", math.NaN(), OutcomeCompleted)),
		jobs(s.TrialFinished("t00004", 0.2, OutcomeCompleted)), // n0 = 1: top 0
		jobs(s.TrialFinished("t00005", 0.8, OutcomeCompleted)), // n0 = 2: top 1 is t5 (max)
		jobs(s.TrialFinished("t00005", 0.1, OutcomeCompleted)), // rung 1, n1 = 1; nothing more
	}
	want := []string{`create t00002 1 "rung 0"`, `create t00003 1 "rung 0"`, `create t00004 1 "rung 0"`, `create t00005 1 "rung 0"`, `continue t00005 2 "rung 1"`, "shutdown"}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// algorithm2 restates promotion ASHA and Hyperband by brute force: every
// record kept, ranked by sorting afresh at every job.
type algorithm2 struct {
	eta           float64
	ladders       [][]float64
	weights       []float64
	credit        []float64
	maxTrials     int
	maxConcurrent int
	mode          string
	created       int
	running       map[string][2]int // bracket, rung
	records       [][][]*oracleRecord
}

type oracleRecord struct {
	id       string
	loss     float64
	promoted bool
}

func newAlgorithm2(eta float64, ladders [][]float64, weights []float64, cfg Config) *algorithm2 {
	o := &algorithm2{eta: eta, ladders: ladders, maxTrials: cfg.MaxTrials, maxConcurrent: cfg.MaxConcurrent, mode: cfg.Mode, running: map[string][2]int{}}
	if len(ladders) > 1 {
		o.weights, o.credit = weights, make([]float64, len(weights))
	}
	for _, l := range ladders {
		o.records = append(o.records, make([][]*oracleRecord, len(l)))
	}
	return o
}

func (o *algorithm2) stage(b, k int) string {
	if o.weights == nil {
		return fmt.Sprintf("rung %d", k)
	}
	return fmt.Sprintf("bracket %d, rung %d", b, k)
}

// end records a run's end and returns the jobs for the slots it frees.
func (o *algorithm2) end(id string, metric float64, completed bool) string {
	at, ok := o.running[id]
	if !ok {
		return ""
	}
	delete(o.running, id)
	if completed && !math.IsNaN(metric) {
		if o.mode == "max" {
			metric = -metric
		}
		o.records[at[0]][at[1]] = append(o.records[at[0]][at[1]], &oracleRecord{id: id, loss: metric})
	}
	return o.fill()
}

func (o *algorithm2) fill() string {
	var acts []string
	for len(o.running) < o.maxConcurrent {
		if r, b, k := o.promotion(); r != nil {
			r.promoted = true
			o.running[r.id] = [2]int{b, k + 1}
			acts = append(acts, fmt.Sprintf("continue %s %g %q", r.id, o.ladders[b][k+1], o.stage(b, k+1)))
			continue
		}
		if o.created == o.maxTrials {
			break
		}
		o.created++
		b := 0
		if o.weights != nil {
			b = nextBracket(o.weights, o.credit)
		}
		id := trialID(o.created)
		o.running[id] = [2]int{b, 0}
		acts = append(acts, fmt.Sprintf("create %s %g %q", id, o.ladders[b][0], o.stage(b, 0)))
	}
	if len(o.running) == 0 {
		acts = append(acts, "shutdown")
	}
	return strings.Join(acts, "; ")
}

// promotion: for each bracket, rungs from the top down, the best of the
// top ⌊n/η⌋ not yet promoted (a stable sort: the older first among
// equals); across brackets the one to the largest budget, the lower
// bracket first among equals.
func (o *algorithm2) promotion() (best *oracleRecord, bb, bk int) {
	to := 0.0
	for b, rungs := range o.records {
		for k := len(rungs) - 2; k >= 0; k-- {
			sorted := slices.SortedStableFunc(slices.Values(rungs[k]), func(x, y *oracleRecord) int { return cmp.Compare(x.loss, y.loss) })
			var found *oracleRecord
			for _, r := range sorted[:int(float64(len(sorted))/o.eta)] {
				if !r.promoted {
					found = r
					break
				}
			}
			if found == nil {
				continue
			}
			if best == nil || o.ladders[b][k+1] > to {
				best, bb, bk, to = found, b, k, o.ladders[b][k+1]
			}
			break
		}
	}
	return best, bb, bk
}

// Through the searcher, promotion ASHA and Hyperband make exactly the
// jobs Algorithm 2 makes on seeded asynchronous workloads: runs ending in
// random order, coarse metrics (ties), failures, stops and NaN metrics.
func TestPromotionMatchesAlgorithm2(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  Settings
		seed uint64
		mode string
	}{
		{"asha r=1 eta=3 R=27", Settings{ASHA: &ASHASettings{MinBudget: 1, ReductionFactor: 3, MaxBudget: 27, Variant: VariantPromotion}}, 1, "min"},
		{"asha r=10 eta=2 R=100", Settings{ASHA: &ASHASettings{MinBudget: 10, ReductionFactor: 2, MaxBudget: 100, Variant: VariantPromotion}}, 2, "max"},
		{"asha r=R", Settings{ASHA: &ASHASettings{MinBudget: 5, MaxBudget: 5, Variant: VariantPromotion}}, 3, "min"},
		{"hyperband r=1 eta=3 R=81", Settings{Hyperband: &HyperbandSettings{MinBudget: 1, MaxBudget: 81, ReductionFactor: 3, Variant: VariantPromotion}}, 4, "min"},
		{"hyperband r=100 eta=2 R=900", Settings{Hyperband: &HyperbandSettings{MinBudget: 100, MaxBudget: 900, ReductionFactor: 2, Variant: VariantPromotion}}, 5, "max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alg := AlgorithmASHA
			if tc.set.Hyperband != nil {
				alg = AlgorithmHyperband
			}
			cfg := Config{Algorithm: alg, Space: testSpace(), Seed: tc.seed, MaxTrials: 400, MaxConcurrent: 8, Mode: tc.mode, Settings: tc.set}
			s, err := NewSearcher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			p := s.(*promoter)
			o := newAlgorithm2(p.eta, p.ladders, p.weights, cfg)
			rng := rand.New(rand.NewPCG(tc.seed, 9))
			got, want := jobs(s.Initial()), o.fill()
			var outstanding []string
			continues := 0
			for {
				if got != want {
					t.Fatalf("searcher: %s\nAlgorithm 2: %s", got, want)
				}
				for _, a := range strings.Split(got, "; ") {
					if f := strings.Fields(a); len(f) > 1 && (f[0] == "create" || f[0] == "continue") {
						outstanding = append(outstanding, f[1])
						if f[0] == "continue" {
							continues++
						}
					}
				}
				if strings.HasSuffix(got, "shutdown") {
					break
				}
				i := rng.IntN(len(outstanding))
				id := outstanding[i]
				outstanding = slices.Delete(outstanding, i, i+1)
				metric := float64(rng.IntN(10)) / 2
				switch r := rng.Float64(); {
				case r < 0.05:
					got, want = jobs(s.TrialFailed(id)), o.end(id, 0, false)
				case r < 0.1:
					got, want = jobs(s.TrialFinished(id, metric, OutcomeStopped)), o.end(id, metric, false)
				case r < 0.12:
					got, want = jobs(s.TrialFinished(id, math.NaN(), OutcomeCompleted)), o.end(id, math.NaN(), true)
				default:
					got, want = jobs(s.TrialFinished(id, metric, OutcomeCompleted)), o.end(id, metric, true)
				}
			}
			if o.created != 400 || len(p.ladders[len(p.ladders)-1]) > 1 && continues < 50 {
				t.Errorf("%d trials created, %d continued: the workload does not exercise promotion", o.created, continues)
			}
		})
	}
}

// Rungs are at r·η^k below R, and R on top; Hyperband's brackets share
// the budgets R/η^j.
func TestPromotionBudgets(t *testing.T) {
	for _, tc := range []struct {
		r, eta, R float64
		want      string
	}{
		{100, 3, 2700, "[[100 300 900 2700]]"},
		{100, 3, 2000, "[[100 300 900 2000]]"},
		{100, 2, 100, "[[100]]"},
		{7, 2, 50, "[[7 14 28 50]]"},
	} {
		s, err := NewSearcher(promotionConfig(10, 2, ASHASettings{MinBudget: tc.r, ReductionFactor: tc.eta, MaxBudget: tc.R}))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(s.(*promoter).ladders); got != tc.want {
			t.Errorf("r %g, η %g, R %g: rungs %s, want %s", tc.r, tc.eta, tc.R, got, tc.want)
		}
	}
	cfg := hyperbandConfig(10, 2)
	cfg.Settings.Hyperband = &HyperbandSettings{MinBudget: 100, MaxBudget: 2700, Variant: VariantPromotion}
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(s.(*promoter).ladders), "[[2700] [900 2700] [300 900 2700] [100 300 900 2700]]"; got != want {
		t.Errorf("hyperband: rungs %s, want %s", got, want)
	}

	// In a run: every trial is created at its bracket's first rung and
	// continued only to the next rung's budget.
	for _, cfg := range []Config{
		promotionConfig(60, 5, ASHASettings{MinBudget: 100, ReductionFactor: 3, MaxBudget: 900}),
		func() Config { c := hyperbandConfig(60, 5); c.Settings.Hyperband.Variant = VariantPromotion; return c }(),
	} {
		sched, created := run(t, cfg, testScript)
		ladders := func() [][]float64 { s, _ := NewSearcher(cfg); return s.(*promoter).ladders }()
		first := map[float64]bool{}
		for _, l := range ladders {
			first[l[0]] = true
		}
		for _, c := range created {
			if !first[c.Budget] {
				t.Errorf("%s: %v: budget %g is no bracket's first rung %v", cfg.Algorithm, c.ID, c.Budget, ladders)
			}
		}
		if !strings.Contains(sched, "continued\n") {
			t.Errorf("%s: nothing continued", cfg.Algorithm)
		}
	}
}

// Max_trials bounds the trials created, not the continues: once it is
// reached, promotions go on until none is left.
func TestPromotionMaxTrials(t *testing.T) {
	cfg := promotionConfig(30, 6, ASHASettings{MinBudget: 100, ReductionFactor: 2, MaxBudget: 800})
	sched, created := run(t, cfg, testScript)
	if len(created) != 30 {
		t.Errorf("%d trials created, want 30", len(created))
	}
	last := strings.LastIndex(sched, "create ")
	if !strings.Contains(sched[last:], "continue ") {
		t.Error("no promotion after the last trial was created")
	}
	for _, c := range created {
		if c.From != "" {
			t.Errorf("%s created from %s: a paused trial is continued, never recreated", c.ID, c.From)
		}
	}
}

// The sampler hears of a trial's first run only: TPE keeps one
// observation per trial, its metric at the first rung, as an
// intermediate (stopped) result.
func TestPromotionSamplerLearnsFirstRung(t *testing.T) {
	cfg := promotionConfig(3, 1, ASHASettings{MinBudget: 1, ReductionFactor: 2, MaxBudget: 2, Sampler: AlgorithmTPE})
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Initial()
	s.TrialFinished("t00001", 5, OutcomeCompleted)
	s.TrialFinished("t00002", 3, OutcomeCompleted) // n0 = 2: t2 promoted
	s.TrialFinished("t00002", 1, OutcomeCompleted) // at R: TPE does not hear of it
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		State struct {
			Sampler struct {
				State struct {
					Metrics []float64 `json:"metrics"`
					Stopped []int     `json:"stopped"`
				} `json:"state"`
			} `json:"sampler"`
		} `json:"state"`
	}
	if err := json.Unmarshal(snap, &st); err != nil {
		t.Fatal(err)
	}
	if got := st.State.Sampler.State; fmt.Sprint(got.Metrics, got.Stopped) != "[5 3] [0 1]" {
		t.Errorf("TPE observed %v, stopped %v; want the first rung's [5 3], both intermediate", got.Metrics, got.Stopped)
	}
}

// A grid smaller than max_trials ends the creates; the search ends once
// the promotions do.
func TestPromotionGridSamplerRunsOut(t *testing.T) {
	space := Space{{Name: "x", Type: ParamFloat, Min: 0, Max: 1}}
	cfg := Config{Algorithm: AlgorithmASHA, Space: space, Seed: 1, MaxTrials: 50, MaxConcurrent: 3, Mode: "min",
		Settings: Settings{ASHA: &ASHASettings{MinBudget: 100, ReductionFactor: 2, MaxBudget: 400, Variant: VariantPromotion, Sampler: AlgorithmGrid}, Grid: &GridSettings{Resolution: 9}}}
	sched, created := run(t, cfg, func(p Params) curve { return curve{Score: p["x"].Num} })
	if len(created) != 9 || !strings.Contains(sched, "continued\n") {
		t.Errorf("%d trials created (want the grid's 9), schedule:\n%s", len(created), sched)
	}
}

// Hyperband looks for promotions in every bracket and takes the one to
// the largest budget, the lower bracket among equals.
func TestHyperbandPromotionOrder(t *testing.T) {
	cfg := hyperbandConfig(100, 1)
	cfg.Settings.Hyperband = &HyperbandSettings{MinBudget: 1, MaxBudget: 9, ReductionFactor: 3, Variant: VariantPromotion}
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := s.(*promoter)
	if got := fmt.Sprint(p.ladders); got != "[[9] [3 9] [1 3 9]]" {
		t.Fatalf("rungs %s", got)
	}
	rung := func(ids ...string) promoRung {
		g := promoRung{N: len(ids)}
		for i, id := range ids {
			g.Top = append(g.Top, promoRecord{ID: id, Value: float64(i)})
		}
		return g
	}
	p.st.Rungs[2][0] = rung("a", "b", "c") // to 3
	if b, k, i, _ := p.promotion(); b != 2 || k != 0 || i != 0 {
		t.Errorf("only bracket 2 rung 0: got bracket %d rung %d record %d", b, k, i)
	}
	p.st.Rungs[1][0] = rung("d", "e", "f") // to 9
	p.st.Rungs[2][1] = rung("g", "h", "i") // to 9 as well
	if b, k, _, _ := p.promotion(); b != 1 || k != 0 {
		t.Errorf("bracket 1 rung 0 and bracket 2 rung 1 both to 9: got bracket %d rung %d, want the lower bracket", b, k)
	}
	p.st.Rungs[1][0].Top[0].Promoted = true
	if b, k, _, _ := p.promotion(); b != 2 || k != 1 {
		t.Errorf("bracket 1 promoted: got bracket %d rung %d, want bracket 2's rung 1 before its rung 0", b, k)
	}
}

// The variant is chosen by name; stopping is the default, with or without
// max_budget, and a snapshot of one variant does not restore into the
// other.
func TestVariantSettings(t *testing.T) {
	for _, tc := range []struct {
		set  Settings
		alg  string
		want string
	}{
		{Settings{ASHA: &ASHASettings{MinBudget: 10, MaxBudget: 100, Variant: "x"}}, AlgorithmASHA, `search.asha.variant: "x" is not one of promotion, stopping`},
		{Settings{ASHA: &ASHASettings{MinBudget: 10, Variant: VariantPromotion}}, AlgorithmASHA, "search.asha.max_budget: required by variant promotion"},
		{Settings{ASHA: &ASHASettings{MinBudget: 10, MaxBudget: 5, Variant: VariantPromotion}}, AlgorithmASHA, "search.asha.max_budget: 5 must be ≥ min_budget 10"},
		{Settings{ASHA: &ASHASettings{MinBudget: 10, MaxBudget: 100, Variant: VariantPromotion, Sampler: "median"}}, AlgorithmASHA, `search.asha.sampler: "median" is not one of`},
		{Settings{Hyperband: &HyperbandSettings{MinBudget: 10, MaxBudget: 100, Variant: "Promotion"}}, AlgorithmHyperband, `search.hyperband.variant: "Promotion" is not one of promotion, stopping`},
	} {
		cfg := Config{Algorithm: tc.alg, Space: testSpace(), Seed: 1, MaxTrials: 2, MaxConcurrent: 1, Mode: "min", Settings: tc.set}
		if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.alg, err, tc.want)
		}
	}
	snapshot := func(cfg Config) []byte {
		s, err := NewSearcher(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.Initial()
		b, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	stopping := Config{Algorithm: AlgorithmASHA, Space: testSpace(), Seed: 1, MaxTrials: 5, MaxConcurrent: 2, Mode: "min",
		Settings: Settings{ASHA: &ASHASettings{MinBudget: 10, MaxBudget: 100}}}
	promotion := stopping
	promotion.Settings = Settings{ASHA: &ASHASettings{MinBudget: 10, MaxBudget: 100, Variant: VariantPromotion}}
	if s, _ := NewSearcher(stopping); fmt.Sprintf("%T", s) != "*hpo.stopper" {
		t.Errorf("asha with max_budget and no variant is a %T, want the stopping variant", s)
	}
	if _, err := RestoreSearcher(promotion, snapshot(stopping)); err == nil {
		t.Error("a stopping snapshot restored into the promotion variant")
	}
	if _, err := RestoreSearcher(stopping, snapshot(promotion)); err == nil {
		t.Error("a promotion snapshot restored into the stopping variant")
	}
	for _, alg := range []string{AlgorithmASHA, AlgorithmHyperband} {
		if d := Describe(alg); !strings.Contains(d, "promotion") || !strings.Contains(d, "stopping") {
			t.Errorf("%s's summary %q names not both variants", alg, d)
		}
	}
}

// Promotion's state keeps ashaKeep records a rung: past ashaKeep·η
// trials at a rung, only the kept ones can be promoted.
func TestPromotionStateIsBounded(t *testing.T) {
	s, err := NewSearcher(promotionConfig(20_000, 1, ASHASettings{MinBudget: 1, ReductionFactor: 3, MaxBudget: 3}))
	if err != nil {
		t.Fatal(err)
	}
	p := s.(*promoter)
	acts := s.Initial()
	for i := 0; len(acts) > 0; i++ {
		switch a := acts[0].(type) {
		case Create:
			acts = s.TrialFinished(a.ID, float64((i*7919)%10_007), OutcomeCompleted)
		case Continue:
			acts = s.TrialFinished(a.TrialID, 0, OutcomeCompleted)
		default:
			acts = nil
		}
	}
	g := p.st.Rungs[0][0]
	if g.N != 20_000 || len(g.Top) != ashaKeep || p.st.Rungs[0][1].N > g.N/3 || len(p.st.Rungs[0][1].Top) != 0 {
		t.Errorf("rung 0: n %d, %d kept; rung 1: n %d, %d kept", g.N, len(g.Top), p.st.Rungs[0][1].N, len(p.st.Rungs[0][1].Top))
	}
}

// A snapshot survives restore, and one whose records were tampered with
// does not restore.
func TestPromotionRestoreRejects(t *testing.T) {
	cfg := promotionConfig(20, 2, ASHASettings{MinBudget: 1, ReductionFactor: 2, MaxBudget: 4})
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Initial()
	s.TrialFinished("t00001", 2, OutcomeCompleted)
	s.TrialFinished("t00002", 1, OutcomeCompleted) // promoted: t2
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	good := `"top":[["t00002",1,true],["t00001",2]]`
	if !strings.Contains(string(snap), good) {
		t.Fatalf("snapshot %s: want rung 0 as %s", snap, good)
	}
	if _, err := RestoreSearcher(cfg, snap); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`"top":[["t00001",2],["t00002",1,true]]`,         // unsorted
		`"top":[["t00002",1,false],["t00001",2]]`,        // not [id, value, true]
		`"top":[["t00002"],["t00001",2]]`,                // no value
		`"top":[["t00002",1,true],["t00001",2],["x",3]]`, // more kept than n
	} {
		if _, err := RestoreSearcher(cfg, []byte(strings.Replace(string(snap), good, bad, 1))); err == nil {
			t.Errorf("restored with %s", bad)
		}
	}
}
