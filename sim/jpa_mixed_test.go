package sim

import (
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/gleaner-hpc/gleaner/curve"
	"github.com/gleaner-hpc/gleaner/data"
)

// Issue 32: a workload that mixes models in one campaign, as BFTrainer's
// own (1,001 ImageNet jobs of seven networks, named J00003-DenseNet).
// Seven curves of data/scaling, one per network, 300 jobs round-robin
// on Summit's first 300 nodes, the first, saturated day. Before, such a
// file's jobs were one campaign whose every curve was every job's sibling
// (names carried no model, and the JPA lent a sibling's shape whatever
// it trained), so a never-measured job was predicted from the other
// networks' mean and a measured one leaned on their shapes. Now the
// model comes from the name (ModelInName) and siblings are of one model
// (jpa.Query.sibling): the same jobs in one campaign are learnt as well
// as with a campaign per model.
func TestJPAOnMixedModelWorkload(t *testing.T) {
	tr := readReal(t, "summit-idle-2021-02-10_14.csv", func(f io.Reader) (*Trace, error) {
		return ReadIdleEvents(f, SourceOptions{})
	})
	tr, err := tr.Restrict(300)
	if err != nil {
		t.Fatal(err)
	}
	seven := mixedCurves(t, 7)
	jobs := SyntheticJobs(seven, 300, 1, SyntheticOptions{Start: tr.Start, NodeHours: 20, Stretch: 4})
	// One campaign, as a BFTrainer file: the jobs named J<n>-<model>.
	named := make([]Job, len(jobs))
	bare := make([]Job, len(jobs))
	for i, j := range jobs {
		named[i], bare[i] = j, j
		named[i].Name = fmt.Sprintf("J%05d-%s", i, j.Model)
		named[i].Model = ModelInName(named[i].Name)
		bare[i].Name, bare[i].Model = fmt.Sprintf("J%05d", i), ""
		if named[i].Model != j.Model {
			t.Fatalf("ModelInName(%q) = %q, want %q", named[i].Name, named[i].Model, j.Model)
		}
	}
	oneCampaign := func(Job) string { return DefaultJPAGroup }
	cfg := Config{Start: tr.Start, End: tr.Start + 86400}
	run := func(jobs []Job, opts *JPAOptions) float64 {
		c := cfg
		if opts != nil {
			a, err := NewJPA(jobs, *opts)
			if err != nil {
				t.Fatal(err)
			}
			c = a.Attach(cfg)
		}
		res, err := Run(tr.Events, jobs, c)
		if err != nil {
			t.Fatal(err)
		}
		return res.Metrics.Throughput
	}
	oracle := run(jobs, nil)
	unnamed := run(bare, &JPAOptions{Seed: 1}) / oracle
	mixed := run(named, &JPAOptions{Seed: 1, Group: oneCampaign}) / oracle
	perModel := run(named, &JPAOptions{Seed: 1}) / oracle
	t.Logf("day 1, JPA / oracle throughput: models unnamed %.3f, named in one campaign %.3f, a campaign per model %.3f",
		unnamed, mixed, perModel)
	if mixed < unnamed+0.01 {
		t.Errorf("naming the models in one campaign gives %.3f of the oracle's throughput against %.3f unnamed, want at least 0.01 more", mixed, unnamed)
	}
	if mixed < perModel-0.01 {
		t.Errorf("one campaign of named models gives %.3f, a campaign per model %.3f: want them level (siblings are of one model)", mixed, perModel)
	}
}

// Issue 32 on BFTrainer's own mixed workload (data.ImageNetMixed: 1,001
// ImageNet jobs, 143 of each of seven networks, arriving 36 s apart from
// hour 19.5 of the trace) on Summit's first 1,000 nodes, from the
// trace's start to a day after the first arrival (the saturated first
// day, as docs/reproduction.md section 2 takes it), under the
// throughput objective. The curves are nearly linear and the networks'
// samples/s per node within a factor of seven, so the allocator is
// nearly indifferent between counts and between jobs of one network,
// and any optimism moves nodes. Two causes were found and mended (jpa,
// Prediction.Optimistic): a fresh job's optimism went to its largest
// count (σ_log ≈ 0.16 from its siblings) and drew nodes from running
// jobs for every new job; and counts next to a measured one were made
// optimistic by the measurement's noise alone. Measured: 0.915 of the
// oracle's throughput before, 0.925 with the second mend alone, 0.953
// with the first alone, 0.955 with both (on all 4,734 nodes: 0.966
// before, 0.984 with both; docs/reproduction.md section 5). Runs in a
// few seconds.
func TestJPAOnBFTrainerMixedWorkload(t *testing.T) {
	tr := readReal(t, "summit-idle-2021-02-10_14.csv", func(f io.Reader) (*Trace, error) {
		return ReadIdleEvents(f, SourceOptions{})
	})
	tr, err := tr.Restrict(1000)
	if err != nil {
		t.Fatal(err)
	}
	jobs := loadSharedJobs(t, data.ImageNetMixed)
	first := jobs[0].Submit
	for _, j := range jobs {
		first = min(first, j.Submit)
	}
	cfg := Config{Start: tr.Start, End: first + 86400}
	oracle, err := Run(tr.Events, jobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewJPA(jobs, JPAOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	learnt, err := Run(tr.Events, jobs, a.Attach(cfg))
	if err != nil {
		t.Fatal(err)
	}
	f := learnt.Metrics.Throughput / oracle.Metrics.Throughput
	t.Logf("BFTrainer's 1,001 jobs of seven networks, day 1 on 1,000 Summit nodes: the JPA at %.3f of the oracle's throughput (%.0f against %.0f samples/s), efficiency %.3f against %.3f",
		f, learnt.Metrics.Throughput, oracle.Metrics.Throughput, learnt.Metrics.EfficiencyVsDedicated, oracle.Metrics.EfficiencyVsDedicated)
	if f < 0.94 {
		t.Errorf("the JPA reaches %.3f of the oracle's throughput, want ≥ 0.94 (0.955 when measured; 0.915 before issue 32's mends)", f)
	}
}

// mixedCurves are n curves of data/scaling of distinct apps and clusters,
// those with the most measured counts first: networks that scale unlike
// one another.
func mixedCurves(t *testing.T, n int) []curve.Scaling {
	t.Helper()
	all := loadRealCurves(t)
	slices.SortStableFunc(all, func(a, b curve.Scaling) int { return len(b.Points) - len(a.Points) })
	var out []curve.Scaling
	seen := map[string]bool{}
	for _, c := range all {
		if k := c.App + "/" + c.Cluster; !seen[k] && len(out) < n {
			seen[k] = true
			out = append(out, c)
		}
	}
	if len(out) < n {
		t.Fatalf("%d curves of distinct apps and clusters, want %d", len(out), n)
	}
	return out
}
