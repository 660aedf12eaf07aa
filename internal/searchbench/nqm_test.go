package searchbench

import (
	"math"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

func lrParams(lr float64) hpo.Params { return hpo.Params{"lr": hpo.Float(lr)} }

// nqmRun is q's loss after its full budget under a schedule (lr at step k).
func nqmRun(q nqmModel, lr func(k int) float64) float64 {
	m := make([]float64, len(q.curv))
	for i := range m {
		m[i] = q.start
	}
	for k := range int(q.steps) {
		q.step(m, lr(k))
	}
	return q.loss(m)
}

// In one direction a constant rate a gives the closed form
// m_k = r^k·m₀ + (1 − r^k)·a·c/(2 − a·h), r = (1 − a·h)², at every
// report; past 2/h it diverges to the cap; and the greedy rate
// m/(h·m + c) reaches the bound exactly.
func TestNQMClosedForm(t *testing.T) {
	q := nqmModel{curv: []float64{0.5}, noise: 0.02, start: 2, steps: 100, every: 5}
	o := q.objective("nqm-1d", "", 1e-4, 10)
	if err := o.Space.Validate(); err != nil {
		t.Fatal(err)
	}
	h, c := q.curv[0], q.noise
	for _, a := range []float64{1e-3, 0.1, 1, 3.9} {
		pts := o.Points(lrParams(a))
		if len(pts) != 20 {
			t.Fatalf("lr %v: %d reports, want 20", a, len(pts))
		}
		for j, p := range pts {
			k := float64(5 * (j + 1))
			r := math.Pow(1-a*h, 2*k)
			want := h / 2 * (r*q.start + (1-r)*a*c/(2-a*h))
			if p.Samples != k || math.Abs(p.Value-want) > 1e-12*want {
				t.Fatalf("lr %v, step %v: %+v, want %v", a, k, p, want)
			}
		}
	}
	pts := o.Points(lrParams(5)) // lr·h = 2.5: |1 − lr·h| > 1
	if last := pts[len(pts)-1].Value; last != h/2*nqmDivergeM {
		t.Errorf("lr 5 past 2/h: final loss %v, want the cap's %v", last, h/2*nqmDivergeM)
	}
	m := []float64{q.start}
	for range int(q.steps) {
		q.step(m, m[0]/(h*m[0]+c))
	}
	if got, want := q.loss(m), q.bound(); math.Abs(got-want) > 1e-12*want || o.Optimum != want {
		t.Errorf("the greedy rate: final loss %v, want the bound %v (optimum %v)", got, want, o.Optimum)
	}

	n := nqm()
	if err := n.Space.Validate(); err != nil {
		t.Fatal(err)
	}
	if pts := n.Points(lrParams(0.05)); len(pts) != nqmSteps/nqmEvery || pts[len(pts)-1].Samples != nqmSteps || !n.Stateful() {
		t.Errorf("nqm: %d reports ending at %v, stateful %v", len(pts), pts[len(pts)-1].Samples, n.Stateful())
	}
}

// bestConstant is the best constant rate over q's full budget and its
// final loss, by a scan of 2001 rates log-spaced over [lo, hi].
func bestConstant(q nqmModel, lo, hi float64) (lr, loss float64) {
	loss = math.Inf(1)
	for k := range 2001 {
		a := lo * math.Pow(hi/lo, float64(k)/2000)
		if l := nqmRun(q, func(int) float64 { return a }); l < loss {
			lr, loss = a, l
		}
	}
	return lr, loss
}

// The best rate falls as training goes on: the best constant rate over a
// tenth of the budget is larger than over all of it, and a geometric
// decay from 0.5 to 0.003 ends with a loss at least twice lower than the
// best constant rate's (five times, in fact).
func TestNQMScheduleBeatsConstant(t *testing.T) {
	q := nqmBench()
	lr, constant := bestConstant(q, nqmMinRate, nqmMaxRate)
	short := q
	short.steps /= 10
	shortLR, _ := bestConstant(short, nqmMinRate, nqmMaxRate)
	decay := nqmRun(q, func(k int) float64 { return 0.5 * math.Pow(0.003/0.5, float64(k)/(q.steps-1)) })
	t.Logf("best constant lr %.4g: loss %.4g; over %v steps: lr %.4g; geometric 0.5 → 0.003: %.4g (%.2f× lower); bound %.4g",
		lr, constant, short.steps, shortLR, decay, constant/decay, q.bound())
	if !(shortLR > 2*lr) {
		t.Errorf("best constant lr over %v steps %v, over %v steps %v: want the shorter run's at least twice larger", short.steps, shortLR, q.steps, lr)
	}
	if !(decay*2 <= constant) || decay < q.bound() {
		t.Errorf("geometric decay: loss %v, best constant %v: want at most half, and at least the bound %v", decay, constant, q.bound())
	}
}

// PBT beats random search at equal budget on the noisy quadratic model:
// over 20 seeds with 8 workers, once 8 full trial budgets are spent (what
// PBT's population of 8 trains in all), PBT's median best loss is lower
// than random search's, with the bench's settings (an exploit/explore
// decision every tenth of the budget; hpo's defaults otherwise: truncation
// at the quarter, factors 0.8 and 1.2, resampling with probability 0.25).
// With a decision every twentieth, PBT's median also beats the best
// constant rate, which no searcher of a constant rate can: PBT learns a
// decaying schedule.
func TestNQMPBTBeatsRandom(t *testing.T) {
	o := nqm()
	_, constant := bestConstant(nqmBench(), nqmMinRate, nqmMaxRate)
	const seeds, workers, budget = 20, 8, 8
	measure := func(method string, set hpo.Settings) Quartiles {
		t.Helper()
		c, err := Measure(Setup{Algorithm: method, Settings: set, Objective: o, Workers: workers, Trials: 100, CostSigma: 0.3}, 1, seeds)
		if err != nil {
			t.Fatal(err)
		}
		return c.AtBudget(budget)
	}
	pbt := func(interval float64) hpo.Settings {
		return hpo.Settings{PBT: &hpo.PBTSettings{Population: workers, Interval: interval, MaxBudget: o.FullBudget}}
	}
	random := measure(hpo.AlgorithmRandom, hpo.Settings{})
	if def := DefaultSettings(hpo.AlgorithmPBT, o).PBT; def.Interval != o.FullBudget/10 {
		t.Fatalf("the bench's pbt interval is %v, not a tenth of the budget", def.Interval)
	}
	tenth, twentieth := measure(hpo.AlgorithmPBT, pbt(o.FullBudget/10)), measure(hpo.AlgorithmPBT, pbt(o.FullBudget/20))
	t.Logf("best loss after %d budgets, median [q1, q3] over %d seeds: random %.3g [%.3g, %.3g]; "+
		"pbt every R/10 %.3g [%.3g, %.3g]; pbt every R/20 %.3g [%.3g, %.3g]; best constant lr %.3g",
		budget, seeds, random.Median, random.Q1, random.Q3, tenth.Median, tenth.Q1, tenth.Q3,
		twentieth.Median, twentieth.Q1, twentieth.Q3, constant)
	if !(tenth.Median < random.Median) {
		t.Errorf("pbt (interval R/10) median %v, random %v: want pbt lower", tenth.Median, random.Median)
	}
	if !(twentieth.Median < constant) {
		t.Errorf("pbt (interval R/20) median %v, best constant lr %v: want pbt lower", twentieth.Median, constant)
	}
}

// Every bench method runs on the noisy quadratic model, and none ends
// below its bound.
func TestNQMMethodsRun(t *testing.T) {
	o := nqm()
	for _, m := range Methods() {
		if err := CanRun(m, o); err != nil {
			t.Errorf("%s on nqm: %v", m, err)
			continue
		}
		run, err := Run(Setup{Algorithm: m, Settings: DefaultSettings(m, o), Objective: o, Workers: 8, Trials: 40, Seed: 1, CostSigma: 0.3})
		if err != nil {
			t.Errorf("%s on nqm: %v", m, err)
			continue
		}
		if len(run) == 0 || run[len(run)-1].Best < o.Optimum {
			t.Errorf("%s on nqm: %d steps, best below the bound %v: %+v", m, len(run), o.Optimum, run)
		}
	}
}
