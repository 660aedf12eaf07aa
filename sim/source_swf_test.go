package sim

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func readTinySWF(t *testing.T, opts SourceOptions) *Trace {
	t.Helper()
	f, err := os.Open("testdata/tiny.swf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadSWF(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr, opts.MinHole)
	return tr
}

func TestReadSWFTiny(t *testing.T) {
	tr := readTinySWF(t, SourceOptions{})
	// Jobs 1 and 2 start at 1010 and take all 4 nodes (job 2 asked for 3
	// through field 8, got 2: 1 node × 50 s clipped), so there is no event
	// then. At 1060 job 2 frees n0002 n0003 and job 3 takes n0002 back;
	// job 4 has no submit time and is skipped; job 5 takes the machine.
	wantEvents(t, tr.Events, ""+
		"1060 idle=[n0003] busy=[]\n"+
		"1100 idle=[n0002] busy=[]\n"+
		"1110 idle=[n0000 n0001] busy=[]\n"+
		"1200 idle=[] busy=[n0000 n0001 n0002 n0003]\n"+
		"1300 idle=[n0000 n0001 n0002 n0003] busy=[]\n")
	if tr.Start != 1010 || tr.End != 1300 || tr.Size != 4 || len(tr.Nodes) != 4 {
		t.Errorf("Start, End, Size, len(Nodes) = %v, %v, %v, %d; want 1010, 1300, 4, 4", tr.Start, tr.End, tr.Size, len(tr.Nodes))
	}
	want := TraceReport{Lines: 8, Records: 5, Jobs: 5, SkippedJobs: 1, ClippedJobs: 1, ClippedNodeSeconds: 50, DeclaredNodes: 4}
	if tr.Report != want {
		t.Errorf("Report %+v, want %+v", tr.Report, want)
	}
	wantHoles(t, tr, []Hole{{"n0000", 1110, 1200}, {"n0001", 1110, 1200}, {"n0002", 1100, 1200}, {"n0003", 1060, 1200}})
	if got := tr.IdleNodeSeconds(); got != 420 {
		t.Errorf("IdleNodeSeconds %v, want 420", got)
	}
	for at, want := range map[float64]int{1010: 0, 1060: 1, 1105: 2, 1150: 4, 1200: 0, 1300: 0} {
		if got := tr.IdleAt(at); got != want {
			t.Errorf("IdleAt(%v) = %d, want %d", at, got, want)
		}
	}
}

func TestReadSWFMinHoleAndMaxNodes(t *testing.T) {
	tr := readTinySWF(t, SourceOptions{MinHole: 95})
	// n0000 and n0001 (90 s) and the zero-length holes at End are dropped.
	wantEvents(t, tr.Events, ""+
		"1060 idle=[n0003] busy=[]\n"+
		"1100 idle=[n0002] busy=[]\n"+
		"1200 idle=[] busy=[n0002 n0003]\n")
	if r := tr.Report; r.DroppedHoles != 6 || r.DroppedNodeSeconds != 180 {
		t.Errorf("dropped %d holes, %v node-seconds; want 6, 180", r.DroppedHoles, r.DroppedNodeSeconds)
	}

	// Overriding the header with 6 nodes: nothing is clipped and n0004,
	// n0005 are idle from the first start.
	tr = readTinySWF(t, SourceOptions{MaxNodes: 6})
	wantEvents(t, tr.Events[:1], "1010 idle=[n0005] busy=[]\n")
	if tr.Report.ClippedJobs != 0 || tr.Size != 6 {
		t.Errorf("ClippedJobs %d, Size %d; want 0, 6", tr.Report.ClippedJobs, tr.Size)
	}
}

func TestReadSWFNoMaxNodes(t *testing.T) {
	in := "1 0 0 10 1 -1 -1 1 10 -1 0 -1 -1 -1 -1 -1 -1 0\n"
	if _, err := ReadSWF(strings.NewReader(in), SourceOptions{}); !errors.Is(err, ErrNoMaxNodes) || !strings.Contains(err.Error(), "MaxNodes") {
		t.Fatalf("err %v, want ErrNoMaxNodes", err)
	}
	tr, err := ReadSWF(strings.NewReader(in+"2 0 0 10 3 -1 -1 3 10 -1 0 -1 -1 -1 -1 -1 -1 0\n"), SourceOptions{MaxNodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr, 0)
	wantEvents(t, tr.Events, "10 idle=[n0000 n0001] busy=[]\n")
	if r := tr.Report; r.ClippedJobs != 1 || r.ClippedNodeSeconds != 20 {
		t.Errorf("clipped %d jobs, %v node-seconds; want 1, 20", r.ClippedJobs, r.ClippedNodeSeconds)
	}
}

func TestReadSWFErrors(t *testing.T) {
	const ok = "1 0 0 10 1 -1 -1 1 10 -1 0 -1 -1 -1 -1 -1 -1 0\n"
	for _, tc := range []struct{ in, want string }{
		{"; MaxNodes: 4\n" + ok + "2 0 0 abc 1 -1 -1 1 10 -1 0 -1 -1 -1 -1 -1 -1 0\n", `line 3: field 4 (run time): "abc" is not a number`},
		{"; MaxNodes: 4\n" + "2 0 -5 10 1 -1 -1 1 10 -1 0 -1 -1 -1 -1 -1 -1 0\n", `line 2: field 3 (wait time): "-5" is negative and not -1 (unknown)`},
		{"; MaxNodes: 4\n" + "2 0 0 10 1.5 -1 -1 1 10 -1 0 -1 -1 -1 -1 -1 -1 0\n", `line 2: field 5 (allocated processors): "1.5" is not a whole number of nodes`},
		{"; MaxNodes: 4\n" + "2 0 0 10 1 -1 -1 1 10 -1 0 -1 -1 -1 -1 -1 x 0\n", `line 2: field 17: "x" is not a number`},
		{"; MaxNodes: 4\n\n" + "2 0 0 10 1\n", "line 3: 5 fields, want 18"},
		{"; MaxNodes: lots\n" + ok, `line 1: header MaxNodes: "lots" is not a node count in 1..1048576`},
		{"; UnixStartTime: Inf\n" + ok, `line 1: header UnixStartTime: "Inf" is not a finite number`},
	} {
		_, err := ReadSWF(strings.NewReader(tc.in), SourceOptions{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: err %v, want %q", tc.in, err, tc.want)
		}
	}
}

// A log whose wait times are all -1 (a model's, which the SWF standard
// allows: a job then starts at its submit time) replays its jobs from
// their submit times; it used to skip every job and leave nothing to
// replay.
func TestReadSWFUnknownWaitStartsAtSubmit(t *testing.T) {
	log := "; MaxNodes: 2\n" +
		"1 0 -1 100 1 -1 -1 1 100 -1 1 -1 -1 -1 -1 -1 -1 -1\n" +
		"2 50 -1 100 2 -1 -1 2 100 -1 1 -1 -1 -1 -1 -1 -1 -1\n"
	tr, err := ReadSWF(strings.NewReader(log), SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Job 1 holds n0000 over [0, 100); job 2 wants both nodes from 50
	// and gets the free one, n0001, until 150 (one node clipped).
	wantEvents(t, tr.Events, ""+
		"0 idle=[n0001] busy=[]\n"+
		"50 idle=[] busy=[n0001]\n"+
		"100 idle=[n0000] busy=[]\n"+
		"150 idle=[n0001] busy=[]\n")
	if tr.Report.SkippedJobs != 0 || tr.Report.UnknownWaits != 2 || tr.Start != 0 || tr.End != 150 {
		t.Errorf("report %+v, [%v, %v]; want no job skipped, 2 unknown waits, [0, 150]", tr.Report, tr.Start, tr.End)
	}
}
