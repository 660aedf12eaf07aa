package slurmdemo

import (
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/data"
)

// planOf is a plan of jobs given as (submit, run, nodes) on a cluster.
func planOf(cluster int, jobs ...[3]time.Duration) Plan {
	p := Plan{Settings: PlanSettings{ClusterNodes: cluster}}
	for _, j := range jobs {
		p.Jobs = append(p.Jobs, PlannedJob{At: j[0], Run: j[1], Nodes: int(j[2])})
		p.Span = j[0]
		p.LongestRun = max(p.LongestRun, j[1])
	}
	return p
}

// Hand-solved: each job starts a second after its submission at the
// soonest, in order, on the first nodes free.
func TestPassLength(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name  string
		plan  Plan
		limit time.Duration
		want  time.Duration
	}{
		{"one job", planOf(2, [3]time.Duration{0, 10 * s, 1}), 0, 11 * s},
		{"side by side", planOf(2, [3]time.Duration{0, 10 * s, 1}, [3]time.Duration{0, 10 * s, 1}), 0, 11 * s},
		// The third waits for the first node free (11 s), runs 5 s.
		{"queued", planOf(2, [3]time.Duration{0, 10 * s, 1}, [3]time.Duration{0, 20 * s, 1}, [3]time.Duration{0, 5 * s, 1}), 0, 21 * s},
		// A 2-node job waits for both (21 s); the 1-node job after it may
		// not pass it (first come, first served) though a node is free at 11 s.
		{"in order", planOf(2, [3]time.Duration{0, 10 * s, 1}, [3]time.Duration{0, 20 * s, 1}, [3]time.Duration{0, 5 * s, 2}, [3]time.Duration{0, 1 * s, 1}), 0, 27 * s},
		// Idle gaps: a late job starts at its submission.
		{"late", planOf(2, [3]time.Duration{0, 10 * s, 1}, [3]time.Duration{60 * s, 10 * s, 2}), 0, 71 * s},
		{"capped", planOf(2, [3]time.Duration{0, 10 * s, 1}, [3]time.Duration{60 * s, 10 * s, 2}), 30 * s, 30 * s},
		// A job larger than the cluster takes the whole cluster.
		{"oversized", planOf(2, [3]time.Duration{0, 10 * s, 5}), 0, 11 * s},
	} {
		if got := PassLength(tc.plan, tc.limit); got != tc.want {
			t.Errorf("%s: PassLength = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The default window: each pass took 15 min 43 s to 15 min 51 s
// (docs/benchmarks.md, Slurm live harvest); the estimate is within 5%,
// and the whole default run (baseline and live) about 33 minutes.
func TestEstimateOfTheDefaultWindow(t *testing.T) {
	f, err := data.Open(data.Prefix + data.Theta2022)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := ReadSWF(f)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := NewPlan(log, PlanSettings{Offset: 179*24*time.Hour + 17*time.Hour, Jobs: 220, ClusterNodes: 6, Compression: 750})
	if err != nil {
		t.Fatal(err)
	}
	measured := 15*time.Minute + 47*time.Second
	if got := PassLength(plan, 0); got < measured*95/100 || got > measured*105/100 {
		t.Errorf("PassLength of the default window = %v, measured %v", got, measured)
	}
	e := EstimateRun(plan, Settings{Baseline: true, Warmup: 2 * time.Minute, Campaign: CampaignSettings{Grace: 5 * time.Second}})
	want := "about 33 min (cluster start 20 s, baseline pass 15 min, cluster restart 25 s, Gleaner start-up and warm-up 40 s, live pass 15 min, teardown and measurements 20 s)"
	if got := e.String(); got != want {
		t.Errorf("estimate\n got %s\nwant %s", got, want)
	}
}

func TestEstimateRunPhases(t *testing.T) {
	plan := planOf(2, [3]time.Duration{0, 100 * time.Second, 1})
	names := func(e Estimate) string {
		var s []string
		for _, p := range e {
			s = append(s, p.Name)
		}
		return strings.Join(s, ", ")
	}
	for _, tc := range []struct {
		name string
		s    Settings
		want string
	}{
		{"defaults", Settings{Baseline: true}, "cluster start, baseline pass, cluster restart, Gleaner start-up and warm-up, live pass, teardown and measurements"},
		{"control", Settings{Baseline: true, Control: true}, "cluster start, baseline pass, cluster restart, control pass, cluster restart, Gleaner start-up and warm-up, live pass, teardown and measurements"},
		{"baseline from a file", Settings{Baseline: true, BaselineFrom: "r.json"}, "cluster start, Gleaner start-up and warm-up, live pass, teardown and measurements"},
		{"running cluster, no baseline", Settings{SlurmConf: "/etc/slurm.conf"}, "Gleaner start-up and warm-up, live pass, teardown and measurements"},
		{"PBS: drained between passes, not restarted", Settings{Baseline: true, Control: true, PBS: &PBSSettings{}}, "cluster start, baseline pass, control pass, Gleaner start-up and warm-up, live pass, teardown and measurements"},
	} {
		if got := names(EstimateRun(plan, tc.s)); got != tc.want {
			t.Errorf("%s: phases %s, want %s", tc.name, got, tc.want)
		}
	}
	// Duration caps each pass; a short Warmup shortens the warm-up.
	e := EstimateRun(plan, Settings{Baseline: true, Duration: 50 * time.Second, Warmup: 5 * time.Second})
	if i := e.Index("baseline pass", 0); e[i].Took != 50*time.Second {
		t.Errorf("baseline pass %v, want the 50 s cap", e[i].Took)
	}
	if i := e.Index("Gleaner start-up and warm-up", 0); e[i].Took != liveStartAllowance+5*time.Second {
		t.Errorf("warm-up %v, want the start-up allowance and the 5 s warm-up", e[i].Took)
	}
	if i := e.Index("live pass", 0); e.Index("live pass", i+1) != -1 || e.Index("cluster restart", i) != -1 {
		t.Errorf("Index finds phases after the one given")
	}
}

func TestEstimateLeft(t *testing.T) {
	m := time.Minute
	e := Estimate{{"a", 1 * m}, {"b", 10 * m}, {"c", 2 * m}}
	for _, tc := range []struct {
		i       int
		elapsed time.Duration
		want    time.Duration
	}{
		{0, 0, 13 * m},
		{1, 4 * m, 8 * m},
		{1, 15 * m, 2 * m}, // overrun: the phases after it are still left
		{2, 2 * m, 0},
		{3, 0, 0},
		{-1, 0, 0},
	} {
		if got := e.Left(tc.i, tc.elapsed); got != tc.want {
			t.Errorf("Left(%d, %v) = %v, want %v", tc.i, tc.elapsed, got, tc.want)
		}
	}
	if e.Total() != 13*m {
		t.Errorf("Total %v", e.Total())
	}
}

func TestAbout(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 s"}, {40 * time.Second, "40 s"}, {59*time.Second + 600*time.Millisecond, "1 min"},
		{90 * time.Second, "2 min"}, {32*time.Minute + 29*time.Second, "32 min"},
		{72 * time.Minute, "1 h 12 min"},
	} {
		if got := About(tc.d); got != tc.want {
			t.Errorf("About(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
