package sim

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func readTinyIdle(t *testing.T, opts SourceOptions) *Trace {
	t.Helper()
	f, err := os.Open("testdata/tiny-idle.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadIdleEvents(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr, opts.MinHole)
	return tr
}

func TestReadIdleEventsTiny(t *testing.T) {
	tr := readTinyIdle(t, SourceOptions{})
	// c goes idle and busy at 100: no change; x and the second "idle a"
	// contradict the state and are ignored.
	wantEvents(t, tr.Events, ""+
		"100 idle=[a b] busy=[]\n"+
		"150 idle=[d] busy=[b]\n"+
		"200 idle=[] busy=[a]\n"+
		"250 idle=[a] busy=[]\n"+
		"300 idle=[] busy=[d]\n")
	if want := []string{"a", "b", "c", "d", "x"}; !reflect.DeepEqual(tr.Nodes, want) {
		t.Errorf("Nodes %v, want %v", tr.Nodes, want)
	}
	if tr.Start != 100 || tr.End != 300 || tr.Size != 6 {
		t.Errorf("Start, End, Size = %v, %v, %v; want 100, 300, 6", tr.Start, tr.End, tr.Size)
	}
	want := TraceReport{Lines: 12, Records: 9, Inconsistent: 2, DeclaredNodes: 6}
	if tr.Report != want {
		t.Errorf("Report %+v, want %+v", tr.Report, want)
	}
	wantHoles(t, tr, []Hole{{"b", 100, 150}, {"a", 100, 200}, {"d", 150, 300}, {"a", 250, 300}})
	if got := tr.IdleNodeSeconds(); got != 350 {
		t.Errorf("IdleNodeSeconds %v, want 350", got)
	}
	if got := tr.MeanIdleFraction(); !approxEqual(got, 350.0/(6*200)) {
		t.Errorf("MeanIdleFraction %v, want %v", got, 350.0/(6*200))
	}
	for at, want := range map[float64]int{99: 0, 100: 2, 149: 2, 150: 2, 225: 1, 250: 2, 300: 0} {
		if got := tr.IdleAt(at); got != want {
			t.Errorf("IdleAt(%v) = %d, want %d", at, got, want)
		}
	}
}

func TestReadIdleEventsMinHole(t *testing.T) {
	tr := readTinyIdle(t, SourceOptions{MinHole: 60})
	// b's 50 s hole and a's last (open until End, 50 s) are dropped; 100 s
	// and 150 s are kept.
	wantEvents(t, tr.Events, ""+
		"100 idle=[a] busy=[]\n"+
		"150 idle=[d] busy=[]\n"+
		"200 idle=[] busy=[a]\n"+
		"300 idle=[] busy=[d]\n")
	if tr.Report.DroppedHoles != 2 || tr.Report.DroppedNodeSeconds != 100 {
		t.Errorf("dropped %d holes, %v node-seconds; want 2, 100", tr.Report.DroppedHoles, tr.Report.DroppedNodeSeconds)
	}
	// A hole exactly MinHole long is kept.
	tr = readTinyIdle(t, SourceOptions{MinHole: 100})
	wantHoles(t, tr, []Hole{{"a", 100, 200}, {"d", 150, 300}})
}

func TestReadIdleEventsWindow(t *testing.T) {
	tr := readTinyIdle(t, SourceOptions{Window: [2]float64{120, 260}})
	wantEvents(t, tr.Events, ""+
		"120 idle=[a b] busy=[]\n"+
		"150 idle=[d] busy=[b]\n"+
		"200 idle=[] busy=[a]\n"+
		"250 idle=[a] busy=[]\n")
	if tr.Start != 120 || tr.End != 260 {
		t.Errorf("Start, End = %v, %v; want 120, 260", tr.Start, tr.End)
	}
	wantHoles(t, tr, []Hole{{"b", 120, 150}, {"a", 120, 200}, {"a", 250, 260}, {"d", 150, 260}})
	// The events at exactly the lower bound are part of the first event.
	tr = readTinyIdle(t, SourceOptions{Window: [2]float64{150, 0}, MinHole: 100})
	wantEvents(t, tr.Events, "150 idle=[d] busy=[]\n300 idle=[] busy=[d]\n")
}

func TestReadIdleEventsErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1,idle,a\n1,busy\n", "line 2: 2 comma-separated fields, want 3 (unix_time,event,nodes)"},
		{"unix_time,event,nodes\n1,idle,a\nx,busy,a\n", `line 3: field 1 (unix_time): "x" is not a finite number`},
		{"1,idle,a\n2,free,a\n", `line 2: field 2 (event): "free" is neither idle nor busy`},
		{"# c\n1,idle,a\n2,busy,  \n", "line 3: field 3 (nodes): no node"},
		{"5,idle,a\n4,busy,a\n", "line 2: field 1 (unix_time): 4 is before the previous event's 5"},
		{"1,idle,a\nunix_time,event,nodes\n", `line 2: field 1 (unix_time): "unix_time" is not a finite number`},
		{"NaN,idle,a\n", `line 1: field 1 (unix_time): "NaN" is not a finite number`},
	} {
		_, err := ReadIdleEvents(strings.NewReader(tc.in), SourceOptions{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: err %v, want %q", tc.in, err, tc.want)
		}
	}
}

// A file cut inside a node name (a copy that stopped short) used to be
// read with the fragment as a phantom node; it is an error naming the
// line, as is a node beyond the size the header declares.
func TestReadIdleEventsCutShort(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1,idle,a01n01 a01n02\n2,busy,a01n01 a01n0", `line 2: field 3 (nodes): the file ends inside a node name ("a01n0", a prefix of "a01n01" and more): is it cut short?`},
		{"# 2 nodes\n1,idle,a01n01 a01n02\n2,idle,a01n03\n", `line 3: field 3 (nodes): "a01n03" makes 3 nodes; the header declares 2`},
	} {
		_, err := ReadIdleEvents(strings.NewReader(tc.in), SourceOptions{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: err %v, want %q", tc.in, err, tc.want)
		}
	}
	// A last line without a newline whose names are whole is fine.
	if _, err := ReadIdleEvents(strings.NewReader("1,idle,a01n01 a01n02\n2,busy,a01n01"), SourceOptions{}); err != nil {
		t.Errorf("a whole last line without a newline: %v", err)
	}
}
