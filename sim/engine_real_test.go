package sim

import (
	"os"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/dataset"
)

func loadRealCurves(t *testing.T) []dataset.ScalingCurve {
	t.Helper()
	curves, err := dataset.LoadScaling(data.Prefix + data.Scaling)
	if err != nil {
		t.Fatal(err)
	}
	return curves
}

// Jobs drawn from the real curves contend for 24 churning nodes (Σ max
// well above the idle count): compact, which weighs each job's measured
// scalability, must train at least as fast as equal share, which does not.
func TestRunCompactBeatsEqualOnRealCurves(t *testing.T) {
	curves := loadRealCurves(t)
	const start, horizon = 0, 12 * 3600
	events := Churn(24, start, horizon, 3600, 1200, 3)
	jobs := SyntheticJobs(curves, 40, 3, SyntheticOptions{Start: start, Window: 4 * 3600, NodeHours: 20, NodeHoursSpread: 0.5})
	results := map[allocator.Formulation]*Result{}
	for _, policy := range []allocator.Formulation{allocator.FormulationCompact, allocator.FormulationGreedy, allocator.FormulationEqual} {
		results[policy] = checkInvariants(t, events, jobs, Config{Policy: policy})
		m := results[policy].Metrics
		t.Logf("%-8s throughput %.1f samples/s, efficiency %.3f, hole utilisation %.3f, rescales %d, preemptions %d, completed %d/%d, solver p50 %.2f ms p99 %.2f ms",
			policy, m.Throughput, m.EfficiencyVsDedicated, m.HoleUtilisation, m.Rescales, m.Preemptions, m.JobsCompleted, len(jobs), m.SolverMsP50, m.SolverMsP99)
	}
	compact, equal := results[allocator.FormulationCompact].Metrics, results[allocator.FormulationEqual].Metrics
	if compact.Throughput < equal.Throughput {
		t.Errorf("compact throughput %v < equal's %v", compact.Throughput, equal.Throughput)
	}
}

// How long the BFTrainer HPO workload (1000 jobs) takes under compact,
// on a 5-day synthetic trace of 100 churning nodes and on the real Summit
// events: the target for the Summit replay is ≤ 60 s. Logged,
// never asserted (DESIGN: speed is measured by benchmarks, not timed
// assertions), and run only with GLEANER_SIM_TIMING=1: it takes minutes.
func TestRunBFTrainerWorkloadTiming(t *testing.T) {
	if os.Getenv("GLEANER_SIM_TIMING") == "" {
		t.Skip("set GLEANER_SIM_TIMING=1 to time the 1000-job workload (minutes)")
	}
	jobs := loadSharedJobs(t, data.HPO1000)
	start := jobs[0].Submit
	timeRun(t, "100 churning nodes over 5 days", Churn(100, start, 5*24*3600, 1800, 1800, 11), jobs)

	f, err := data.Open(data.Prefix + data.SummitIdle)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadIdleEvents(f, SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	timeRun(t, "Summit idle events 10-14 Feb 2021", tr.Events, jobs)
}

func timeRun(t *testing.T, what string, events []Event, jobs []Job) {
	t.Helper()
	wall := time.Now()
	res, err := Run(events, jobs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	t.Logf("%s (%d events), 1000 BFTrainer jobs, compact: %v wall; %d decisions, solver total %.1f s, p50 %.2f ms, p99 %.2f ms, max %.1f ms; completed %d, throughput %.0f samples/s, efficiency %.3f, hole utilisation %.3f, rescales %d, preemptions %d",
		what, len(events), time.Since(wall).Round(time.Millisecond), m.Decisions, m.SolverMsTotal/1000, m.SolverMsP50, m.SolverMsP99, m.SolverMsMax, m.JobsCompleted, m.Throughput, m.EfficiencyVsDedicated, m.HoleUtilisation, m.Rescales, m.Preemptions)
}
