package slurmdemo

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestScaleNodes(t *testing.T) {
	for _, tc := range []struct{ n, trace, cluster, want int }{
		{128, 4360, 6, 1},    // 0.18 of a node: at least one
		{363, 4360, 6, 1},    // 0.4996: rounds down
		{364, 4360, 6, 1},    // 0.5009: rounds up to 1 anyway
		{1024, 4360, 6, 1},   // 1.41
		{1090, 4360, 6, 2},   // 1.5
		{2048, 4360, 6, 3},   // 2.82
		{4360, 4360, 6, 6},   // the whole machine is the whole cluster
		{9000, 4360, 6, 6},   // an oversubscribed log line: at most the cluster
		{1, 1, 8, 8},         // a one-node machine
		{3, 8, 8, 3},         // same size: unchanged
		{0, 4360, 6, 1},      // (ReadSWF skips size 0; the scaler still gives 1)
		{4359, 4360, 1, 1},   // a one-node cluster
		{2180, 4360, 7, 4},   // 3.5 rounds half away from zero
		{1868, 4360, 7, 3},   // 2.999
		{4000, 4360, 64, 59}, // 58.7
	} {
		if got := ScaleNodes(tc.n, tc.trace, tc.cluster); got != tc.want {
			t.Errorf("ScaleNodes(%d, %d, %d) = %d, want %d", tc.n, tc.trace, tc.cluster, got, tc.want)
		}
	}
}

// Property: the scaled size is always in 1..cluster and never decreases
// with the logged size.
func TestScaleNodesBoundedAndMonotone(t *testing.T) {
	for _, cluster := range []int{1, 4, 6, 8, 13} {
		prev := 0
		for n := 1; n <= 5000; n += 7 {
			k := ScaleNodes(n, 4360, cluster)
			if k < 1 || k > cluster || k < prev {
				t.Fatalf("ScaleNodes(%d, 4360, %d) = %d after %d", n, cluster, k, prev)
			}
			prev = k
		}
	}
}

func TestCeilMinutes(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, time.Minute}, {time.Millisecond, time.Minute}, {time.Minute, time.Minute},
		{time.Minute + time.Millisecond, 2 * time.Minute}, {119 * time.Second, 2 * time.Minute},
	} {
		if got := CeilMinutes(tc.in); got != tc.want {
			t.Errorf("CeilMinutes(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// swfJobs builds a log of jobs (id i+1) from "submit run nodes req" tuples.
func swfJobs(maxNodes int, jobs ...[4]int64) *SWFLog {
	l := &SWFLog{MaxNodes: maxNodes}
	for i, j := range jobs {
		l.Jobs = append(l.Jobs, SWFJob{ID: int64(i + 1), Submit: j[0], Run: j[1], Nodes: int(j[2]), ReqTime: j[3]})
	}
	return l
}

func TestNewPlanCompressesSizesAndLimits(t *testing.T) {
	log := swfJobs(100,
		[4]int64{1000, 600, 10, 3600},  // requested 360 s: 6 min
		[4]int64{1600, 6000, 50, 3700}, // ran past its request: the limit follows the run (600 s = 10 min)
		[4]int64{2200, 3, 100, -1},     // 0.3 s runs MinRun; unknown request: 1 min
		[4]int64{4000, 900, 1, 3660},   // requested 366 s: 7 min
	)
	p, err := NewPlan(log, PlanSettings{Jobs: 4, ClusterNodes: 4, Compression: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []PlannedJob{
		{Name: "swf-1", TraceID: 1, At: 0, Nodes: 1, Run: 60 * time.Second, Limit: 6 * time.Minute, TraceNodes: 10, TraceRun: 600 * time.Second},
		{Name: "swf-2", TraceID: 2, At: 60 * time.Second, Nodes: 2, Run: 600 * time.Second, Limit: 10 * time.Minute, TraceNodes: 50, TraceRun: 6000 * time.Second},
		{Name: "swf-3", TraceID: 3, At: 120 * time.Second, Nodes: 4, Run: time.Second, Limit: time.Minute, TraceNodes: 100, TraceRun: 3 * time.Second},
		{Name: "swf-4", TraceID: 4, At: 300 * time.Second, Nodes: 1, Run: 90 * time.Second, Limit: 7 * time.Minute, TraceNodes: 1, TraceRun: 900 * time.Second},
	}
	for i := range want {
		if p.Jobs[i] != want[i] {
			t.Errorf("job %d:\n got %+v\nwant %+v", i, p.Jobs[i], want[i])
		}
	}
	if p.Span != 300*time.Second || p.LongestRun != 600*time.Second || p.TraceStart != 1000 {
		t.Errorf("span %v, longest %v, start %d; want 5m, 10m, 1000", p.Span, p.LongestRun, p.TraceStart)
	}
	// Node-seconds: 1×60 + 2×600 + 4×1 + 1×90 = 1354 over 4 nodes × 300 s.
	if p.NodeSeconds != 1354 || fmt.Sprintf("%.4f", p.Load) != "1.1283" {
		t.Errorf("node-seconds %v, load %v; want 1354, 1.1283", p.NodeSeconds, p.Load)
	}
	// On the logged machine: 10×600 + 50×6000 + 100×3 + 1×900 over 100 × 3000.
	if fmt.Sprintf("%.4f", p.TraceLoad) != "1.0240" {
		t.Errorf("trace load %v, want 1.0240", p.TraceLoad)
	}
}

func TestNewPlanWindow(t *testing.T) {
	// Out of order in the file: the plan sorts by submit time.
	log := swfJobs(10, [4]int64{500, 1, 1, 60}, [4]int64{100, 1, 1, 60}, [4]int64{300, 1, 1, 60}, [4]int64{200, 1, 1, 60}, [4]int64{400, 1, 1, 60})
	names := func(p Plan) string {
		var s []string
		for _, j := range p.Jobs {
			s = append(s, fmt.Sprintf("%s@%v", j.Name, j.At))
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		offset time.Duration
		jobs   int
		want   string
	}{
		{0, 2, "swf-2@0s swf-4@1m40s"},
		{150 * time.Second, 3, "swf-3@0s swf-5@1m40s swf-1@3m20s"}, // the first at or after 100 + 150 s
		{200 * time.Second, 1, "swf-3@0s"},
		{400 * time.Second, 1, "swf-1@0s"},
	} {
		p, err := NewPlan(log, PlanSettings{Offset: tc.offset, Jobs: tc.jobs, ClusterNodes: 2, Compression: 1})
		if err != nil {
			t.Fatalf("offset %v: %v", tc.offset, err)
		}
		if got := names(p); got != tc.want {
			t.Errorf("offset %v, %d jobs: got %s, want %s", tc.offset, tc.jobs, got, tc.want)
		}
	}
	if _, err := NewPlan(log, PlanSettings{Offset: 150 * time.Second, Jobs: 4, ClusterNodes: 2, Compression: 1}); err == nil || !strings.Contains(err.Error(), "only 3") {
		t.Errorf("a window past the log's end: %v, want an error saying only 3 jobs", err)
	}
	if _, err := NewPlan(log, PlanSettings{Offset: time.Hour, Jobs: 1, ClusterNodes: 2, Compression: 1}); !errors.Is(err, ErrEmptyWindow) {
		t.Errorf("an offset past the last job: %v, want ErrEmptyWindow", err)
	}
}

func TestNewPlanRejectsBadSettings(t *testing.T) {
	log := swfJobs(10, [4]int64{0, 1, 1, 60})
	for _, tc := range []struct {
		s    PlanSettings
		want string
	}{
		{PlanSettings{Jobs: 0, ClusterNodes: 2, Compression: 1}, "jobs"},
		{PlanSettings{Jobs: 1, ClusterNodes: 0, Compression: 1}, "cluster nodes"},
		{PlanSettings{Jobs: 1, ClusterNodes: 2, Compression: 0}, "compression"},
		{PlanSettings{Jobs: 1, ClusterNodes: 2, Compression: 1, Offset: -time.Second}, "offset"},
	} {
		if _, err := NewPlan(log, tc.s); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error about %s", tc.s, err, tc.want)
		}
	}
	if _, err := NewPlan(&SWFLog{Jobs: log.Jobs}, PlanSettings{Jobs: 1, ClusterNodes: 2, Compression: 1}); err == nil || !strings.Contains(err.Error(), "MaxNodes") {
		t.Errorf("no machine size: got %v, want an error naming MaxNodes", err)
	}
}
