package sim

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/jpa"
)

// runExactJPA replays job alone on events, the JPA measuring exactly.
func runExactJPA(t *testing.T, job Job, events []Event) (*JPA, *Result) {
	t.Helper()
	a, err := NewJPA([]Job{job}, JPAOptions{Noise: -1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(events, []Job{job}, a.Attach(Config{}))
	if err != nil {
		t.Fatal(err)
	}
	return a, res
}

// With exact measurements, a job that ran at 1, 2 and 4 nodes (the idle
// set grows under it) is told its true throughput at those counts.
func TestJPAExactMeasurementsGiveTrueValues(t *testing.T) {
	job := Job{
		Name: "a", MinNodes: 1, MaxNodes: 6, TotalSamples: 1e12,
		Curve:     allocator.Curve{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 180}, {Nodes: 3, Throughput: 240}, {Nodes: 4, Throughput: 300}, {Nodes: 5, Throughput: 320}, {Nodes: 6, Throughput: 330}},
		RescaleUp: 20, RescaleDown: 10,
	}
	events := []Event{
		{Time: 0, Idle: []string{"n1"}},
		{Time: 1000, Idle: []string{"n2"}},
		{Time: 2000, Idle: []string{"n3", "n4"}},
		{Time: 3000},
	}
	a, res := runExactJPA(t, job, events)
	if res.PerJob[0].Rescales != 2 {
		t.Fatalf("rescales = %d, want 2 (1 → 2 → 4 nodes)", res.PerJob[0].Rescales)
	}
	obs := a.Profiler().Observations("a")
	if len(obs) != 3 {
		t.Fatalf("observations %+v, want counts 1, 2, 4", obs)
	}
	// Exact measurements never move: each count is published once.
	if st := a.Stats(); st.Published != 3 {
		t.Errorf("published %d estimates, want 3 (one per count): %+v", st.Published, st)
	}
	got := a.Curve(0, 3000)
	for _, o := range obs {
		want := job.Curve.At(o.Nodes)
		if math.Abs(o.Throughput-want) > 1e-9*want {
			t.Errorf("measured %v at %d nodes, want %v", o.Throughput, o.Nodes, want)
		}
		if c := got.At(o.Nodes); math.Abs(c-want) > 1e-9*want {
			t.Errorf("curve at measured %d nodes = %v, want the true %v", o.Nodes, c, want)
		}
	}
	if n := got[len(got)-1].Nodes; n != job.MaxNodes {
		t.Errorf("curve ends at %d nodes, want MaxNodes %d", n, job.MaxNodes)
	}
}

// Before anything is measured every job gets the n^0.9 prior; once a
// sibling is measured, an unmeasured job is predicted from it.
func TestJPAPriorThenSiblings(t *testing.T) {
	curve := allocator.Curve{{Nodes: 1, Throughput: 50}, {Nodes: 2, Throughput: 90}}
	jobs := []Job{
		{Name: "a", MinNodes: 1, MaxNodes: 2, TotalSamples: 1e9, Curve: curve},
		{Name: "b", MinNodes: 1, MaxNodes: 2, TotalSamples: 1e9, Curve: curve},
	}
	a, err := NewJPA(jobs, JPAOptions{Noise: -1})
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Curve(1, 0); c.At(1) != 1 || math.Abs(c.At(2)-math.Pow(2, 0.9)) > 1e-12 {
		t.Fatalf("prior curve %v, want n^0.9", c)
	}
	a.Measure(0, 2, "", 0, 600, 90*600)
	if c := a.Curve(1, 600); math.Abs(c.At(2)-90)/90 > 0.5 || c.At(2) < 10 {
		t.Fatalf("sibling-predicted curve %v, want near job a's 90 samples/s at 2 nodes", c)
	}
}

// realContest is a contested scenario built from the real curves: 40
// jobs on 24 churning nodes for 12 hours.
func realContest(t *testing.T) ([]Event, []Job) {
	curves := loadRealCurves(t)
	const horizon = 12 * 3600
	events := Churn(24, 0, horizon, 3600, 1200, 3)
	jobs := SyntheticJobs(curves, 40, 3, SyntheticOptions{Window: 4 * 3600, NodeHours: 20, NodeHoursSpread: 0.5})
	return events, jobs
}

// MalleTrain's question on a small contested scenario: how much of the
// oracle's throughput does compact reach when it learns the curves
// online through the JPA from 5 %-noisy measurements? The target
// is ≥ 95 %; the test asserts a conservative floor (accuracy, never
// timing) and logs the number.
func TestJPAThroughputVsOracleOnRealCurves(t *testing.T) {
	events, jobs := realContest(t)
	oracle := checkInvariants(t, events, jobs, Config{}).Metrics
	for _, grouping := range []struct {
		name  string
		group func(Job) string
	}{
		{"one workload group", func(Job) string { return DefaultJPAGroup }},
		{"one group per model (the default)", nil},
	} {
		var fracs []float64
		for seed := uint64(1); seed <= 3; seed++ {
			a, err := NewJPA(jobs, JPAOptions{Seed: seed, Group: grouping.group})
			if err != nil {
				t.Fatal(err)
			}
			m := checkInvariants(t, events, jobs, a.Attach(Config{})).Metrics
			f := m.Throughput / oracle.Throughput
			fracs = append(fracs, f)
			t.Logf("%s, seed %d: jpa throughput %.1f vs oracle %.1f samples/s = %.3f of oracle; efficiency %.3f vs %.3f; completed %d vs %d; rescales %d vs %d",
				grouping.name, seed, m.Throughput, oracle.Throughput, f, m.EfficiencyVsDedicated, oracle.EfficiencyVsDedicated, m.JobsCompleted, oracle.JobsCompleted, m.Rescales, oracle.Rescales)
			if f < 0.8 {
				t.Errorf("%s, seed %d: jpa reaches %.3f of oracle throughput, want ≥ 0.8", grouping.name, seed, f)
			}
		}
		t.Logf("%s: jpa/oracle throughput %.3f (mean of %d seeds)", grouping.name, mean(fracs), len(fracs))
	}
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// A job shrunk from 6 nodes to 1 owes RescaleDown × its 6-node rate,
// which the engine re-trains at the 1-node rate: its useful samples stall
// for minutes. The trainer re-trains from its checkpoint at full speed
// all the while, so what the JPA measures at 1 node is the true rate,
// not the stall.
func TestJPAMeasuresTheRateThroughARescaleStall(t *testing.T) {
	job := Job{
		Name: "a", MinNodes: 1, MaxNodes: 6, TotalSamples: 1e12,
		Curve:     allocator.Curve{{Nodes: 1, Throughput: 100}, {Nodes: 6, Throughput: 550}},
		RescaleUp: 20, RescaleDown: 60, // 60 s × 550/s = 33,000 samples: 330 s at 1 node
	}
	events := []Event{
		{Time: 0, Idle: []string{"n1", "n2", "n3", "n4", "n5", "n6"}},
		{Time: 1000, Busy: []string{"n2", "n3", "n4", "n5", "n6"}},
		{Time: 3000},
	}
	a, res := runExactJPA(t, job, events)
	if res.PerJob[0].Preemptions != 1 || res.PerJob[0].ProgressLost != 33000 {
		t.Fatalf("preemptions %d, progress lost %v: want 1 and 33000", res.PerJob[0].Preemptions, res.PerJob[0].ProgressLost)
	}
	for _, o := range a.Profiler().Observations("a") {
		if want := job.Curve.At(o.Nodes); math.Abs(o.Throughput-want) > 1e-9*want {
			t.Errorf("measured %v samples/s at %d nodes, want the true %v", o.Throughput, o.Nodes, want)
		}
	}
}

// The JPA predicts a job again only when its profile or the library
// changed: a JPA that rebuilds and predicts everything at every decision
// (as production's Allocate does) must make the same run.
func TestJPACachesChangeNothing(t *testing.T) {
	events, jobs := realContest(t)
	for _, setup := range []struct {
		name string
		opts JPAOptions
	}{
		{"one group per model", JPAOptions{Seed: 5}},
		// One campaign capped at 2 siblings: the library keeps some jobs
		// and not others, so most changes leave it as it was.
		{"one group, 2 siblings kept", JPAOptions{Seed: 5, SiblingsPerGroup: 2, Group: func(Job) string { return "all" }}},
	} {
		var metrics [2]Metrics
		var stats [2]JPAStats
		for i, uncached := range []bool{false, true} {
			a, err := NewJPA(jobs, setup.opts)
			if err != nil {
				t.Fatal(err)
			}
			a.uncached = uncached
			res, err := Run(events, jobs, a.Attach(Config{}))
			if err != nil {
				t.Fatal(err)
			}
			m := res.Metrics
			m.SolverMsP50, m.SolverMsP99, m.SolverMsMax, m.SolverMsTotal = 0, 0, 0, 0
			metrics[i], stats[i] = m, a.Stats()
		}
		if !reflect.DeepEqual(metrics[0], metrics[1]) {
			t.Errorf("%s: cached and uncached runs differ:\n%+v\n%+v", setup.name, metrics[0], metrics[1])
		}
		if stats[0].Predictions*2 > stats[1].Predictions {
			t.Errorf("%s: the caches saved little: %d predictions against %d uncached", setup.name, stats[0].Predictions, stats[1].Predictions)
		}
		t.Logf("%s: cached %+v; uncached %+v", setup.name, stats[0], stats[1])
	}
}

func TestNewJPARejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts JPAOptions
		want string
	}{
		{JPAOptions{Noise: math.NaN()}, "JPAOptions.Noise"},
		{JPAOptions{Interval: math.Inf(1)}, "JPAOptions.Interval"},
		{JPAOptions{ProfileChange: math.NaN()}, "JPAOptions.ProfileChange"},
		{JPAOptions{Prior: []jpa.PriorCurve{{Name: "p", Points: []jpa.Point{{Nodes: 2, Throughput: 1}, {Nodes: 1, Throughput: 1}}}}}, "JPAOptions.Prior"},
	} {
		_, err := NewJPA(nil, tc.opts)
		if err == nil || !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want ErrInvalidInput naming %s", tc.opts, err, tc.want)
		}
	}
}

// The same seed gives the same run (metrics other than solver times).
func TestJPADeterministic(t *testing.T) {
	events, jobs := realContest(t)
	run := func(seed uint64) Metrics {
		a, err := NewJPA(jobs, JPAOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(events, jobs, a.Attach(Config{}))
		if err != nil {
			t.Fatal(err)
		}
		m := res.Metrics
		m.SolverMsP50, m.SolverMsP99, m.SolverMsMax, m.SolverMsTotal = 0, 0, 0, 0
		return m
	}
	a, b := run(7), run(7)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different metrics:\n%+v\n%+v", a, b)
	}
}

// Jobs are grouped by Model unless told otherwise: a BFTrainer workload
// (no model) is one campaign, synthetic jobs of different curves are not
// siblings.
func TestJPAGroupsByModel(t *testing.T) {
	curve := allocator.Curve{{Nodes: 1, Throughput: 1}}
	jobs := []Job{{Name: "a", Curve: curve}, {Name: "b", Model: "resnet", Curve: curve}, {Name: "c", Model: "bert", Curve: curve}}
	a, err := NewJPA(jobs, JPAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{DefaultJPAGroup, "resnet", "bert"}; !reflect.DeepEqual(a.groups, want) {
		t.Errorf("groups %v, want %v", a.groups, want)
	}
	a, err = NewJPA(jobs, JPAOptions{Group: func(j Job) string { return "all" }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"all", "all", "all"}; !reflect.DeepEqual(a.groups, want) {
		t.Errorf("with Group: groups %v, want %v", a.groups, want)
	}
}
