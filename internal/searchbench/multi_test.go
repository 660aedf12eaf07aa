package searchbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/nas"
)

func problem(t *testing.T, name string) Problem {
	t.Helper()
	ps, err := LookupProblems([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

func floatParams(xs ...float64) hpo.Params {
	p := hpo.Params{}
	for i, x := range xs {
		p[fmt.Sprintf("x%d", i+1)] = hpo.Float(x)
	}
	return p
}

// ZDT1's front: x₂…x₆ = 0 gives f₂ = 1 − √f₁, and 2,001 points of it fill
// its hypervolume at (1.1, 1.1) to within the spacing.
func TestZDT1Front(t *testing.T) {
	p := problem(t, ProblemZDT1)
	var front []hpo.Result
	for i := 0; i <= 2000; i++ {
		x := float64(i) / 2000
		r := p.F(floatParams(x, 0, 0, 0, 0, 0))
		if want := 1 - math.Sqrt(x); math.Abs(r.Values[1]-want) > 1e-12 || r.Values[0] != x {
			t.Fatalf("ZDT1 at x1 = %g on the front: %v, want (%g, %g)", x, r.Values, x, want)
		}
		front = append(front, r)
	}
	if got := p.F(floatParams(0.25, 1, 1, 1, 1, 1)).Values; math.Abs(got[1]-10*(1-math.Sqrt(0.025))) > 1e-12 {
		t.Errorf("ZDT1 at (0.25, 1, …): %v, want g = 10, f2 = 10·(1 − √0.025)", got)
	}
	hv := p.Goals().Hypervolume(front, p.Ref)
	if math.Abs(p.FrontHV-0.876667) > 1e-6 || hv > p.FrontHV || p.FrontHV-hv > 1e-3 {
		t.Errorf("ZDT1 front hypervolume %v; of 2,001 front points %v: want just under", p.FrontHV, hv)
	}
}

// DTLZ2's front: x₃…x₇ = ½ puts f on the unit sphere; a 40 × 40 grid of
// it comes within 0.03 of the front's hypervolume 1.1³ − π/6.
func TestDTLZ2Front(t *testing.T) {
	p := problem(t, ProblemDTLZ2)
	if got := p.F(floatParams(0, 0, 0.5, 0.5, 0.5, 0.5, 0.5)).Values; math.Abs(got[0]-1) > 1e-12 || math.Abs(got[1]) > 1e-12 || math.Abs(got[2]) > 1e-12 {
		t.Errorf("DTLZ2 at x1 = x2 = 0 on the front: %v, want (1, 0, 0)", got)
	}
	if got := p.F(floatParams(1, 1, 0, 0, 0, 0, 0)).Values; math.Abs(got[2]-2.25) > 1e-12 {
		t.Errorf("DTLZ2 at x1 = 1, g = 1.25: %v, want f3 = 2.25", got)
	}
	var front []hpo.Result
	for i := 0; i < 40; i++ {
		for j := 0; j < 40; j++ {
			r := p.F(floatParams(float64(i)/39, float64(j)/39, 0.5, 0.5, 0.5, 0.5, 0.5))
			norm := math.Sqrt(r.Values[0]*r.Values[0] + r.Values[1]*r.Values[1] + r.Values[2]*r.Values[2])
			if math.Abs(norm-1) > 1e-12 {
				t.Fatalf("DTLZ2 at (%d, %d) on the front: |f| = %v, want 1", i, j, norm)
			}
			front = append(front, r)
		}
	}
	hv := p.Goals().Hypervolume(front, p.Ref)
	if math.Abs(p.FrontHV-(1.331-math.Pi/6)) > 1e-12 || hv > p.FrontHV || p.FrontHV-hv > 0.03 {
		t.Errorf("DTLZ2 front hypervolume %v; of a 40 × 40 grid of the front %v: want just under", p.FrontHV, hv)
	}
}

// TNK's front lies on c1's boundary, r² = 1 + 0.1·cos(16ψ) at angle ψ from
// the x₂ axis, where c2 holds: 200,001 points of the boundary give the
// front's hypervolume at (1.2, 1.2), which tnkFrontHV states.
func TestTNKFront(t *testing.T) {
	p := problem(t, ProblemTNK)
	g := p.Goals()
	if r := p.F(floatParams(1, 0.2)); !g.Feasible(r) {
		t.Errorf("TNK at (1, 0.2): %v, want feasible", r)
	}
	if r := p.F(floatParams(1, 0)); g.Feasible(r) || math.Abs(r.Constraints[0]+0.1) > 1e-12 {
		t.Errorf("TNK at (1, 0): %v, want infeasible, c1 = 1 − 1 − 0.1·cos 8π = −0.1", r)
	}
	if r := p.F(floatParams(0.5, 0.5)); g.Feasible(r) {
		t.Errorf("TNK at (½, ½): %v, want infeasible (inside c1)", r)
	}
	if r := p.F(floatParams(2, 2)); g.Feasible(r) {
		t.Errorf("TNK at (2, 2): %v, want infeasible (outside c2)", r)
	}
	var pts [][2]float64
	const n = 200000
	for i := 0; i <= n; i++ {
		psi := math.Pi / 2 * float64(i) / n
		r := math.Sqrt(1 + 0.1*math.Cos(16*psi))
		x1, x2 := r*math.Sin(psi), r*math.Cos(psi)
		if c := tnkConstraints(x1, x2); math.Abs(c[0]) > 1e-9 {
			t.Fatalf("TNK boundary at ψ = %g: c1 = %g, want 0", psi, c[0])
		}
		if (x1-0.5)*(x1-0.5)+(x2-0.5)*(x2-0.5) <= 0.5 {
			pts = append(pts, [2]float64{x1, x2})
		}
	}
	hv := sweepHV2(pts, p.Ref)
	t.Logf("TNK front hypervolume at (1.2, 1.2): %.7f", hv)
	if math.Abs(hv-p.FrontHV) > 5e-6 {
		t.Errorf("TNK front hypervolume of the boundary %.6f, tnkFrontHV %.6f", hv, p.FrontHV)
	}
}

// sweepHV2 is the hypervolume of 2-D minimisation points (dominated ones
// included) below ref, in O(n log n).
func sweepHV2(pts [][2]float64, ref []float64) float64 {
	sort.Slice(pts, func(i, j int) bool { return pts[i][0] < pts[j][0] })
	hv, prev := 0.0, ref[1]
	for _, q := range pts {
		if q[0] < ref[0] && q[1] < prev {
			hv += (ref[0] - q[0]) * (prev - q[1])
			prev = q[1]
		}
	}
	return hv
}

// The NAS table covers the nas-cell space: every one of its 4,096 raw
// cells, and exactly the canonical cells of the nas-cell table, each
// with the accuracy that table holds after its last epoch count.
func TestNASMultiTable(t *testing.T) {
	p := problem(t, ProblemNASCell)
	tab, err := loadNASMulti()
	if err != nil {
		t.Fatal(err)
	}
	single, err := loadNASTable()
	if err != nil {
		t.Fatal(err)
	}
	if len(tab) != len(single.curves) {
		t.Errorf("%d cells in %s, %d in %s", len(tab), nasMultiFile, len(single.curves), nasCellFile)
	}
	for h := range single.curves {
		if _, ok := tab[h]; !ok {
			t.Errorf("%s (%s) is in %s, not in %s", h, single.names[h], nasCellFile, nasMultiFile)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	arch, err := nas.New(*p.Space[0].Architecture)
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		a := arch.Sample(rng)
		r := p.F(hpo.Params{"arch": hpo.String(a)})
		if r.Values[1] < 0.02 || r.Values[1] > 0.125 || r.Values[0] < 0 || r.Values[0] > 1 {
			t.Fatalf("%s: %v, want an accuracy in [0, 1] and a latency in (0.02, 0.125) ms", a, r.Values)
		}
	}
	if !(p.FrontHV > 0 && p.FrontHV < 0.125) {
		t.Errorf("front hypervolume %v, want in (0, 0.125): accuracy ≤ 1 × latency < 0.125 ms", p.FrontHV)
	}
}

// The table is what genmulti writes from the nas-cell table and the
// throughput model now.
func TestNASMultiTableUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genmulti")
	}
	root := repoRoot(t)
	out := filepath.Join(t.TempDir(), "nas-multi.csv")
	cmd := exec.Command("go", "run", "./internal/searchbench/genmulti", "--out", out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("genmulti: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := curveFiles.ReadFile(nasMultiFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what genmulti writes now: go run ./internal/searchbench/genmulti", nasMultiFile)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// The tracker's hypervolume after each result is Goals.Hypervolume of all
// results so far, on every problem (TNK's infeasible results included).
func TestHypervolumeTrackerMatchesGoals(t *testing.T) {
	for _, p := range Problems() {
		t.Run(p.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			var rs []hpo.Result
			tr := NewHypervolumeTracker(p)
			for i := range 120 {
				r := p.F(p.Space.Sample(rng))
				rs = append(rs, r)
				got, want := tr.Add(r), p.Goals().Hypervolume(rs, p.Ref)
				if math.Abs(got-want) > 1e-12 {
					t.Fatalf("after %d results: tracker %v, Goals.Hypervolume %v", i+1, got, want)
				}
				if got > p.FrontHV+1e-9 {
					t.Fatalf("after %d results: hypervolume %v above the front's %v", i+1, got, p.FrontHV)
				}
			}
		})
	}
}

func TestWinProbability(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{2, 3}, []float64{1}, 1},
		{[]float64{1}, []float64{2, 3}, 0},
		{[]float64{1, 2}, []float64{1, 2}, 0.5},
		{[]float64{1, 3}, []float64{2}, 0.5},
		{[]float64{2, 2, 4}, []float64{2, 3}, (0.5 + 0 + 0.5 + 0 + 1 + 1) / 6},
	} {
		if got := WinProbability(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("WinProbability(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if !math.IsNaN(WinProbability(nil, []float64{1})) {
		t.Error("WinProbability of no runs: want NaN")
	}
}

// The stream's first draws (frozen: multi_vs_optuna.py draws the same) and
// its log-normal shape.
func TestSharedDurations(t *testing.T) {
	d := SharedDurations(1, 0.3)
	want := []float64{0.9897724640745702, 0.4723569883547078, 1.0266660837019805}
	for i, w := range want {
		if got := d(); math.Abs(got-w) > 1e-15*w {
			t.Errorf("draw %d: %v, want %v", i, got, w)
		}
	}
	var sum, sq float64
	const n = 20000
	d = SharedDurations(7, 0.3)
	for range n {
		l := math.Log(d())
		sum, sq = sum+l, sq+l*l
	}
	mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
	if math.Abs(mean) > 0.01 || math.Abs(sd-0.3) > 0.01 {
		t.Errorf("log durations: mean %v, sd %v, want 0 and 0.3", mean, sd)
	}
	if one := SharedDurations(7, 0); one() != 1 {
		t.Error("σ = 0: want every trial to take 1")
	}
}

// The harness on random search, 2 seeds: a hypervolume per ended trial,
// never falling, never above the front's, the same for the same seed.
func TestRunMultiRandom(t *testing.T) {
	for _, p := range Problems() {
		for seed := uint64(1); seed <= 2; seed++ {
			s := MultiSetup{Algorithm: hpo.AlgorithmRandom, Problem: p, Workers: 8, Trials: 60, Seed: seed, CostSigma: 0.3}
			run := func() []float64 {
				hv, err := RunMulti(s)
				if err != nil {
					t.Fatal(err)
				}
				return hv
			}
			hv := run()
			if len(hv) != s.Trials {
				t.Fatalf("%s seed %d: %d hypervolumes, want one per trial (%d)", p.Name, seed, len(hv), s.Trials)
			}
			for i := 1; i < len(hv); i++ {
				if hv[i] < hv[i-1] || hv[i] > p.FrontHV+1e-9 {
					t.Fatalf("%s seed %d: hypervolume %v after %d trials, %v before, front %v", p.Name, seed, hv[i], i+1, hv[i-1], p.FrontHV)
				}
			}
			// Random search rarely lands inside ZDT1's or TNK's reference
			// box in 60 trials (ZDT1 needs x₂…x₆ near 0).
			if (p.Name == ProblemDTLZ2 || p.Name == ProblemNASCell) && hv[len(hv)-1] <= 0 {
				t.Errorf("%s seed %d: hypervolume 0 after %d random trials", p.Name, seed, s.Trials)
			}
			if again := run(); !slices.Equal(again, hv) {
				t.Errorf("%s seed %d: two runs differ", p.Name, seed)
			}
		}
	}
}

// ForeignRuns: the protocol must match, every seed must be there, and the
// hypervolumes are Problem.Hypervolumes of the results in order.
func TestForeignRuns(t *testing.T) {
	p := problem(t, ProblemZDT1)
	f := ForeignRuns{Trials: 2, Workers: 8, Seed: 1, Seeds: 2, Sigma: 0.3, Runs: []ForeignRun{
		{Problem: ProblemZDT1, Method: "optuna-x", Seed: 1, Results: []hpo.Result{{Values: []float64{0.5, 0.5}}, {Values: []float64{0, 2}}}},
		{Problem: ProblemZDT1, Method: "optuna-x", Seed: 2, Results: []hpo.Result{{Values: []float64{2, 2}}, {Values: []float64{0, 0}}}},
	}}
	if err := f.Protocol(2, 8, 0.3, 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := f.Protocol(2, 4, 0.3, 1, 2); err == nil || !strings.Contains(err.Error(), "8 workers, these runs 4") {
		t.Errorf("another worker count: %v", err)
	}
	cs, err := f.Curves(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Method != "optuna-x" {
		t.Fatalf("curves %+v", cs)
	}
	if got := cs[0].Finals(1); !closeAll(got, []float64{0.36, 0}) {
		t.Errorf("after 1 trial: %v, want [0.36 0]", got)
	}
	if got := cs[0].Finals(2); !closeAll(got, []float64{0.36, 1.21}) {
		t.Errorf("after 2 trials: %v, want [0.36 1.21]", got)
	}
	f.Seeds = 3
	if _, err := f.Curves(p); err == nil || !strings.Contains(err.Error(), "no run for seed 3") {
		t.Errorf("a missing seed: %v", err)
	}
	f.Runs[0].Results[0].Values = []float64{1}
	if _, err := f.Curves(p); err == nil || !strings.Contains(err.Error(), "1 values and 0 constraints, want 2 and 0") {
		t.Errorf("a result of another problem: %v", err)
	}
}

// The Python problems of scripts/multi_vs_optuna.py give the same results
// as these, and its cost stream the same durations.
func TestMultiProblemsMatchPython(t *testing.T) {
	py := optunaPython(t)
	script := filepath.Join(repoRoot(t), "scripts", "multi_vs_optuna.py")
	rng := rand.New(rand.NewPCG(5, 6))
	ops := nasCellSpace.Ops
	type req struct {
		Problem string         `json:"problem"`
		Params  map[string]any `json:"params"`
	}
	var reqs []req
	var want []hpo.Result
	for _, p := range Problems() {
		for range 25 {
			params, py := hpo.Params{}, map[string]any{}
			if p.Name == ProblemNASCell {
				e := make([]string, 6)
				for k := range e {
					e[k] = ops[rng.IntN(len(ops))]
					py[fmt.Sprintf("edge%d", k+1)] = e[k]
				}
				params["arch"] = hpo.String(fmt.Sprintf(`{"cell":{"nodes":4,"edges":[[%q],[%q,%q],[%q,%q,%q]],"stacks":2,"cells":1,"channels":8}}`,
					e[0], e[1], e[2], e[3], e[4], e[5]))
			} else {
				for k, v := range p.Space.Sample(rng) {
					params[k], py[k] = v, v.Num
				}
			}
			reqs = append(reqs, req{p.Name, py})
			want = append(want, p.F(params))
		}
	}
	var in bytes.Buffer
	for _, r := range reqs {
		b, _ := json.Marshal(r)
		in.Write(append(b, '\n'))
	}
	cmd := exec.Command(py, script, "--eval")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for i := 0; sc.Scan(); i++ {
		var got hpo.Result
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if !closeAll(got.Values, want[i].Values) || !closeAll(got.Constraints, want[i].Constraints) {
			t.Errorf("%s at %v: Python %v, Go %v", reqs[i].Problem, reqs[i].Params, got, want[i])
		}
	}
	out, err = exec.Command(py, script, "--durations", "11,500", "--sigma", "0.3").Output()
	if err != nil {
		t.Fatal(err)
	}
	d := SharedDurations(11, 0.3)
	for i, line := range strings.Fields(string(out)) {
		got, _ := strconv.ParseFloat(line, 64)
		if w := d(); math.Abs(got-w) > 1e-13*w {
			t.Fatalf("duration %d of seed 11: Python %v, Go %v", i, got, w)
		}
	}
}

func closeAll(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12*math.Max(1, math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// motpe-mv is motpe with one joint l/g (search.motpe.multivariate): on
// ZDT1, whose front needs x₂…x₆ near 0 together, it must find more than
// the per-parameter default by 200 trials (docs/search.md: 0.567 against
// 0.220 after 500, seeds 1–20).
func TestMOTPEMultivariateOnZDT1(t *testing.T) {
	p, err := LookupProblems([]string{ProblemZDT1})
	if err != nil {
		t.Fatal(err)
	}
	median := func(method string) float64 {
		var hv []float64
		for seed := uint64(1); seed <= 5; seed++ {
			s := MultiSetup{Algorithm: method, Settings: MultiSettings(method), Problem: p[0], Workers: 8, Trials: 200, Seed: seed, CostSigma: 0.3}
			run, err := RunMulti(s)
			if err != nil {
				t.Fatal(err)
			}
			hv = append(hv, run[len(run)-1])
		}
		slices.Sort(hv)
		return hv[len(hv)/2]
	}
	mv, ind := median(MOTPEMultivariate), median(hpo.AlgorithmMOTPE)
	t.Logf("ZDT1, 200 trials, median over seeds 1–5: motpe-mv %.4f, motpe %.4f", mv, ind)
	if !(mv > ind) {
		t.Errorf("motpe-mv %.4f, not above motpe's %.4f", mv, ind)
	}
	if !slices.Contains(MultiMethods(), MOTPEMultivariate) {
		t.Errorf("MultiMethods %v lacks %s", MultiMethods(), MOTPEMultivariate)
	}
}
