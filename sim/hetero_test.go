package sim

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
)

func flat(x float64) allocator.Curve { return allocator.Curve{{Nodes: 1, Throughput: x}} }

func TestAssignNodeTypesProportionsAndDeterminism(t *testing.T) {
	var ids []string
	for n := range 10 {
		ids = append(ids, fmt.Sprintf("n%02d", n))
	}
	mix := []TypeShare{{"k80", 1}, {"p100", 1}, {"v100", 1}}
	got, err := AssignNodeTypes(ids, mix, 7)
	if err != nil {
		t.Fatal(err)
	}
	perType := map[string]int{}
	for _, typ := range got {
		perType[typ]++
	}
	// 10/3 each: floors 3, 3, 3; the one left goes to the first type.
	if want := map[string]int{"k80": 4, "p100": 3, "v100": 3}; !maps.Equal(perType, want) {
		t.Errorf("types per node count %v, want %v", perType, want)
	}
	reversed := slices.Clone(ids)
	slices.Reverse(reversed)
	again, _ := AssignNodeTypes(append(reversed, ids[0]), mix, 7) // order and repeats do not matter
	if !maps.Equal(got, again) {
		t.Errorf("same seed and node set, other order: %v, want %v", again, got)
	}
	other, _ := AssignNodeTypes(ids, mix, 8)
	if maps.Equal(got, other) {
		t.Errorf("seeds 7 and 8 typed the nodes alike: %v", got)
	}
	weighted, _ := AssignNodeTypes(ids, []TypeShare{{"a", 0.25}, {"b", 0.75}}, 1)
	n := 0
	for _, typ := range weighted {
		if typ == "a" {
			n++
		}
	}
	if n != 3 { // 2.5 and 7.5: a tie on remainders goes to the first type
		t.Errorf("a 25%% share of 10 nodes gave %d nodes, want 3", n)
	}
	if _, err := AssignNodeTypes(ids, nil, 1); err == nil {
		t.Error("an empty mix: no error")
	}
}

func TestParseTypeMix(t *testing.T) {
	mix, err := ParseTypeMix(" k80=1, v100 = 2.5")
	if err != nil {
		t.Fatal(err)
	}
	if want := []TypeShare{{"k80", 1}, {"v100", 2.5}}; !slices.Equal(mix, want) {
		t.Errorf("got %v, want %v", mix, want)
	}
	for in, want := range map[string]string{
		"k80":           "not TYPE=WEIGHT",
		"=1":            "not TYPE=WEIGHT",
		"k80=0":         "not a positive number",
		"k80=x":         "not a positive number",
		"k80=1,k80=2":   "given twice",
		"k80=1,,v100=1": "not TYPE=WEIGHT",
	} {
		if _, err := ParseTypeMix(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", in, err, want)
		}
	}
}

func TestReadGavel(t *testing.T) {
	const table = "job_type,scale_factor,k80,v100\n" +
		"A3C,1,3.5,7\n" +
		"LM (batch size 5),2,30,180\n" +
		"LM (batch size 5),1,25,100\n"
	types, err := ReadGavel(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	if len(types) != 2 || types[0].Name != "A3C" || types[1].Name != "LM (batch size 5)" {
		t.Fatalf("job types %+v", types)
	}
	want := allocator.Curve{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 180}}
	if got := types[1].Curves["v100"]; !slices.Equal(got, want) {
		t.Errorf("LM on v100: %v, want %v (sorted by scale factor)", got, want)
	}
	for in, want := range map[string]string{
		"job,scale_factor,k80\n":                      "line 1: header",
		"job_type,scale_factor,k80\nA,0,1\n":          "line 2, column 2 (scale_factor)",
		"job_type,scale_factor,k80\nA,1,-1\n":         "line 2, column 3 (k80)",
		"job_type,scale_factor,k80\nA,1,1\nA,1,2\n":   "line 3: A at scale factor 1 repeats",
		"job_type,scale_factor,k80\n,1,1\n":           "line 2, column 1 (job_type): empty",
		"job_type,scale_factor,k80\nA,1,1,7\n":        "wrong number of fields",
		"job_type,scale_factor,k80,v100\nA,1,1,nan\n": "column 4 (v100)",
	} {
		if _, err := ReadGavel(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", in, err, want)
		}
	}
}

// GavelJobs on the real table: every job has a curve on each asked GPU,
// reaching its bounds; a job type Gavel could not run at some scale on
// some asked GPU (ResNet-50 at batch size 128 on 2+ K80s) is left out;
// one-GPU job types run on one node; the same seed gives the same jobs.
func TestGavelJobs(t *testing.T) {
	gavel := loadGavel(t)
	if len(gavel) != 26 {
		t.Errorf("%d job types in Gavel's table, want 26", len(gavel))
	}
	gpus := []string{"k80", "v100"}
	jobs := GavelJobs(gavel, gpus, 200, 3, SyntheticOptions{NodeHours: 2, Stretch: 2})
	if len(jobs) != 200 {
		t.Fatalf("%d jobs, want 200", len(jobs))
	}
	for _, j := range jobs {
		if err := validateJob(j); err != nil {
			t.Fatalf("%s: %v", j.Name, err)
		}
		if !slices.Equal(j.Types(), gpus) {
			t.Errorf("%s: types %v, want %v", j.Name, j.Types(), gpus)
		}
		if j.Model == "ResNet-50 (batch size 128)" {
			t.Errorf("%s: drawn from %s, which did not run on 2+ K80s", j.Name, j.Model)
		}
		if (j.Model == "A3C" || j.Model == "CycleGAN") && j.MaxNodes != 2 {
			t.Errorf("%s (%s): max %d nodes, want 2 (one GPU × stretch 2)", j.Name, j.Model, j.MaxNodes)
		}
		_, k, perNode := j.BestPlacement()
		if math.Abs(j.TotalSamples/perNode-2*3600) > 1e-6*j.TotalSamples/perNode || k < j.MinNodes || k > j.MaxNodes {
			t.Errorf("%s: %v samples at %v/node-s at %d nodes, want 2 node-hours", j.Name, j.TotalSamples, perNode, k)
		}
	}
	if again := GavelJobs(gavel, gpus, 200, 3, SyntheticOptions{NodeHours: 2, Stretch: 2}); fmt.Sprint(again) != fmt.Sprint(jobs) {
		t.Error("the same seed drew other jobs")
	}
	if GavelJobs(gavel, []string{"a100"}, 5, 1, SyntheticOptions{}) != nil {
		t.Error("jobs drawn for a GPU Gavel did not measure")
	}
}

func TestJobPlacementAndReferenceRate(t *testing.T) {
	j := Job{MinNodes: 2, MaxNodes: 4, CurvesByType: map[string]allocator.Curve{
		"slow": {{Nodes: 2, Throughput: 4}, {Nodes: 4, Throughput: 6}},
		"fast": {{Nodes: 2, Throughput: 10}, {Nodes: 4, Throughput: 12}},
		"dead": {{Nodes: 4, Throughput: 0}},
	}}
	if typ, k, perNode := j.BestPlacement(); typ != "fast" || k != 2 || perNode != 5 {
		t.Errorf("best placement %s × %d at %v/node, want fast × 2 at 5", typ, k, perNode)
	}
	if r := j.ReferenceRate(); r != 2 { // slow at 2 nodes; dead runs at 0 and is skipped
		t.Errorf("reference rate %v, want 2", r)
	}
	untyped := Job{MinNodes: 2, MaxNodes: 2, Curve: allocator.Curve{{Nodes: 2, Throughput: 3}}}
	if r := untyped.ReferenceRate(); r != 1.5 {
		t.Errorf("untyped reference rate %v, want 1.5", r)
	}
	mean := meanCurve(map[string]allocator.Curve{"a": {{Nodes: 2, Throughput: 4}}, "b": {{Nodes: 1, Throughput: 1}, {Nodes: 2, Throughput: 8}}})
	if want := (allocator.Curve{{Nodes: 1, Throughput: 1.5}, {Nodes: 2, Throughput: 6}}); !slices.Equal(mean, want) {
		t.Errorf("mean curve %v, want %v", mean, want)
	}
}

// Two one-node jobs on a k80 (a) and a v100 (b) for 100 s, under the
// efficiency objective. A runs 10/s on a k80 and 100/s on a v100; B 10/s
// and 11/s. Told the truth, the allocator puts A on the v100 (worth 10
// reference nodes to it, B 1.1): A trains 10,000 samples, B 1,000; work
// 10,000/10 + 1,000/10 = 1,100 reference node-seconds, 11 per second.
// Told each job's mean curve on both types, both placements are worth
// the same to it; whichever it picks, each job trains at its true rate on
// the type it got.
func TestRunTypedPool(t *testing.T) {
	jobs := []Job{
		{Name: "A", MinNodes: 1, MaxNodes: 1, TotalSamples: 1e9, CurvesByType: map[string]allocator.Curve{"k80": flat(10), "v100": flat(100)}},
		{Name: "B", MinNodes: 1, MaxNodes: 1, TotalSamples: 1e9, CurvesByType: map[string]allocator.Curve{"k80": flat(10), "v100": flat(11)}},
	}
	types := map[string]string{"a": "k80", "b": "v100"}
	cfg := Config{Start: 0, End: 100, Initial: []string{"a", "b"}, NodeTypes: types, Objective: allocator.ObjectiveEfficiency}
	res, err := Run(nil, jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "A samples", res.PerJob[0].Samples, 10000)
	near(t, "B samples", res.PerJob[1].Samples, 1000)
	near(t, "work", res.Metrics.Work, 1100)
	near(t, "work rate", res.Metrics.WorkRate, 11)
	near(t, "v100 node-s", res.NodeSecondsByType["v100"], 100)
	near(t, "k80 node-s", res.NodeSecondsByType["k80"], 100)
	if res.Metrics.Makespan != 0 {
		t.Errorf("makespan %v with no job completed, want 0", res.Metrics.Makespan)
	}

	blind, err := TypeBlind(jobs, "mean")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Curves = blind
	cfg.observeProblem = func(_ float64, p *allocator.Problem) {
		for _, tr := range p.Trials {
			want := map[string]allocator.Curve{"k80": flat(55), "v100": flat(55)}
			if tr.ID == "B" {
				want = map[string]allocator.Curve{"k80": flat(10.5), "v100": flat(10.5)}
			}
			if len(tr.Curve) != 0 || fmt.Sprint(tr.CurvesByType) != fmt.Sprint(want) {
				t.Errorf("type-blind: trial %s told curve %v, by type %v; want by type %v", tr.ID, tr.Curve, tr.CurvesByType, want)
			}
		}
	}
	got := map[string]string{}
	cfg.observe = func(e *engine) {
		for j, st := range e.st {
			if len(st.nodes) > 0 {
				got[jobs[j].Name] = types[st.nodes[0]]
			}
		}
	}
	res, err = Run(nil, jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for j, pj := range res.PerJob {
		c, _ := jobs[j].curveOn(got[jobs[j].Name])
		near(t, jobs[j].Name+" samples (blind)", pj.Samples, 100*c.At(1))
	}
	if res.Metrics.WorkRate > 11 {
		t.Errorf("type-blind work rate %v above the aware optimum 11", res.Metrics.WorkRate)
	}
}

// A pool whose nodes all have one type, with untyped jobs, replays exactly
// as the same pool without types.
func TestRunOneTypeMatchesUntyped(t *testing.T) {
	events := Churn(8, 0, 20000, 600, 600, 4)
	jobs := []Job{
		{Name: "A", MinNodes: 1, MaxNodes: 4, RescaleUp: 10, RescaleDown: 5, TotalSamples: 1e5, Curve: allocator.Curve{{Nodes: 1, Throughput: 10}, {Nodes: 4, Throughput: 30}}},
		{Name: "B", MinNodes: 2, MaxNodes: 6, RescaleUp: 8, RescaleDown: 4, TotalSamples: 1e9, Curve: allocator.Curve{{Nodes: 2, Throughput: 5}, {Nodes: 6, Throughput: 14}}},
	}
	fixed := func() time.Time { return time.Unix(0, 0) }
	plain, err := Run(events, jobs, Config{Clock: fixed})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for n := range 8 {
		types[fmt.Sprintf("n%04d", n)] = "x"
	}
	typed, err := Run(events, jobs, Config{Clock: fixed, NodeTypes: types})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Metrics != typed.Metrics {
		t.Errorf("one typed pool:\n%+v\nuntyped:\n%+v", typed.Metrics, plain.Metrics)
	}
	near(t, "x node-s", typed.NodeSecondsByType["x"], plain.Metrics.AllocatedNodeSeconds)
	if plain.NodeSecondsByType != nil {
		t.Errorf("untyped pool: node-s by type %v, want nil", plain.NodeSecondsByType)
	}
}

// A typed job never gets nodes of a type it has no curve for, told the
// truth or type-blind, and a typed run keeps the engine's invariants.
func TestRunTypedJobsStayOnTheirTypes(t *testing.T) {
	gavel := loadGavel(t)
	events := Churn(12, 0, 12*3600, 1800, 900, 5)
	var ids []string
	for n := range 12 {
		ids = append(ids, fmt.Sprintf("n%04d", n))
	}
	types, err := AssignNodeTypes(ids, []TypeShare{{"k80", 1}, {"v100", 1}, {"tpu", 1}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	jobs := GavelJobs(gavel, []string{"k80", "v100"}, 10, 5, SyntheticOptions{NodeHours: 2})
	blind, err := TypeBlind(jobs, "v100")
	if err != nil {
		t.Fatal(err)
	}
	for name, curves := range map[string]CurveSource{"aware": nil, "blind": blind} {
		cfg := Config{NodeTypes: types, Objective: allocator.ObjectiveEfficiency, Curves: curves}
		cfg.observe = func(e *engine) {
			for j, st := range e.st {
				seen := map[string]bool{}
				for _, id := range st.nodes {
					seen[types[id]] = true
				}
				if len(seen) > 1 || seen["tpu"] {
					t.Fatalf("%s, t=%v: job %s on nodes of types %v", name, e.now, jobs[j].Name, seen)
				}
				if len(st.nodes) > 0 {
					c, _ := jobs[j].curveOn(types[st.nodes[0]])
					if st.rate != c.At(len(st.nodes)) {
						t.Fatalf("%s, t=%v: job %s trains at %v on %d %s nodes, its curve says %v", name, e.now, jobs[j].Name, st.rate, len(st.nodes), types[st.nodes[0]], c.At(len(st.nodes)))
					}
				}
			}
		}
		res, err := Run(events, jobs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.NodeSecondsByType["tpu"] != 0 {
			t.Errorf("%s: %v node-s on tpu", name, res.NodeSecondsByType["tpu"])
		}
		m := res.Metrics
		if m.EfficiencyVsDedicated > 1+1e-9 || m.HoleUtilisation > 1+1e-9 || m.Work <= 0 {
			t.Errorf("%s: efficiency %v, utilisation %v, work %v", name, m.EfficiencyVsDedicated, m.HoleUtilisation, m.Work)
		}
	}
	if _, err := TypeBlind(jobs, "p100"); err == nil {
		t.Error("type-blind as a type the jobs have no curve for: no error")
	}
}

func TestRunRejectsCurveAndCurvesByType(t *testing.T) {
	jobs := []Job{{Name: "J", MinNodes: 1, MaxNodes: 1, TotalSamples: 1, Curve: flat(1), CurvesByType: map[string]allocator.Curve{"k80": flat(1)}}}
	_, err := Run([]Event{{Time: 0, Idle: []string{"a"}}, {Time: 10}}, jobs, Config{})
	if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "curves_by_type are both set") {
		t.Errorf("error %v, want ErrInvalidInput naming both curves", err)
	}
}
