package slurmdemo

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/cluster/slurm"
	"github.com/gleaner-hpc/gleaner/sim"
)

func TestIdleHoles(t *testing.T) {
	tl := NewTimeline([]string{"g1", "g2"}, "batch", "glean")
	for _, s := range []Snapshot{
		{At: at(0), Jobs: []slurm.Job{batchJob("1", "swf-1", "RUNNING", 0, 10, "g1")}},
		// g1 free at 10, a pilot (and then a trial) on it at 12 and 14: one
		// hole, whatever held it; g2 stays free until swf-2 at 30.
		{At: at(10), Jobs: nil},
		{At: at(12), Jobs: []slurm.Job{pilotJob("7", "RUNNING", 12, 1800, "g1")}},
		{At: at(14), Jobs: []slurm.Job{pilotJob("7", "RUNNING", 12, 1800, "g1")}, Pool: pool("g1", "t1")},
		{At: at(30), Jobs: []slurm.Job{pilotJob("7", "RUNNING", 12, 1800, "g1"), batchJob("2", "swf-2", "RUNNING", 30, 90, "g2")}, Pool: pool("g1", "t1")},
	} {
		tl.Observe(s)
	}
	tl.Close(at(40))
	u := func(s float64) float64 { return float64(at(s).UnixNano()) / 1e9 }
	got := IdleHoles(tl, at(5), at(40))
	want := []sim.Hole{{Node: "g2", Start: u(5), End: u(30)}, {Node: "g1", Start: u(10), End: u(40)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("holes\n got %+v\nwant %+v", got, want)
	}
}

// The events written are read back by the simulator's reader as the same
// holes: an oracle for the format.
func TestIdleEventsRoundTrip(t *testing.T) {
	holes := []sim.Hole{
		{Node: "g1", Start: 1000, End: 1010},
		{Node: "g2", Start: 1000, End: 1030},
		{Node: "g1", Start: 1010, End: 1020}, // closes and reopens at one instant: one hole for the reader
		{Node: "g3", Start: 1015, End: 1040},
	}
	evs := HoleEvents(holes)
	if len(evs) != 5 || evs[1].Time != 1015 {
		t.Fatalf("events %+v: want 5: 1000, 1015, 1020, 1030, 1040 (1010 changes nothing)", evs)
	}
	var b bytes.Buffer
	if err := WriteIdleEvents(&b, 3, evs, "a test\nof two lines"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "# a test\n# of two lines\n# 3 nodes\nunix_time,event,nodes\n1000.000,idle,g1 g2\n") {
		t.Errorf("file:\n%s", b.String())
	}
	tr, err := sim.ReadIdleEvents(&b, sim.SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Size != 3 || tr.Report.Inconsistent != 0 {
		t.Errorf("size %d, inconsistent %d", tr.Size, tr.Report.Inconsistent)
	}
	var got []sim.Hole
	for _, h := range tr.Holes() {
		got = append(got, h)
	}
	want := []sim.Hole{{Node: "g1", Start: 1000, End: 1020}, {Node: "g2", Start: 1000, End: 1030}, {Node: "g3", Start: 1015, End: 1040}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n got %+v\nwant %+v", got, want)
	}
}

func TestShiftHoles(t *testing.T) {
	holes := []sim.Hole{{Node: "a", Start: 0, End: 50}, {Node: "b", Start: 10, End: 12}, {Node: "c", Start: 20, End: 30}}
	got := ShiftHoles(holes, 0, 3e9) // 3 s
	want := []sim.Hole{{Node: "a", Start: 0, End: 50}, {Node: "c", Start: 23, End: 30}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v (a hole open at the start stays whole; one shorter than the lag goes)", got, want)
	}
}

func TestPredict(t *testing.T) {
	holes := []sim.Hole{{Node: "a", Start: 0, End: 100}, {Node: "b", Start: 50, End: 100}}
	w := SimWorkload{Jobs: 3, Samples: 1e6, Rate: 10, MinNodes: 1, MaxNodes: 1}
	m, err := Predict(holes, 0, 100, w)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(m.HoleUtilisation-1) > 1e-9 || math.Abs(m.IdleNodeSeconds-150) > 1e-9 || math.Abs(m.EfficiencyVsDedicated-1) > 1e-9 {
		t.Errorf("enough jobs: utilisation %v of %v idle node-s, efficiency %v; want 1 of 150, 1", m.HoleUtilisation, m.IdleNodeSeconds, m.EfficiencyVsDedicated)
	}
	w.Jobs = 1
	if m, err = Predict(holes, 0, 100, w); err != nil || math.Abs(m.HoleUtilisation-100.0/150) > 1e-9 {
		t.Errorf("one job: utilisation %v (%v), want 2/3", m.HoleUtilisation, err)
	}
	if _, err := Predict(nil, 0, 100, w); err == nil {
		t.Error("no holes: want an error")
	}
}
