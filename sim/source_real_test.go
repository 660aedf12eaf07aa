package sim

import (
	"io"
	"slices"
	"testing"

	"github.com/gleaner-hpc/gleaner/data"
)

// readReal reads a trace of the built-in reference data (data/traces,
// see data/README.md): name is its file name in traces/.
func readReal(t *testing.T, name string, read func(io.Reader) (*Trace, error)) *Trace {
	t.Helper()
	f, err := data.Open(data.Prefix + "traces/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := read(f)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// logHoles prints the numbers docs/traces.md quotes.
func logHoles(t *testing.T, tr *Trace) {
	t.Helper()
	holes := tr.Holes()
	lengths := make([]float64, len(holes))
	for i, h := range holes {
		lengths[i] = h.End - h.Start
	}
	slices.Sort(lengths)
	q := func(p float64) float64 { return lengths[int(p*float64(len(lengths)-1))] }
	t.Logf("%d events, %d nodes named, size %d, %.1f days; %d holes: median %.0f s, p90 %.0f s, p99 %.0f s, max %.0f s",
		len(tr.Events), len(tr.Nodes), tr.Size, (tr.End-tr.Start)/86400, len(holes), q(0.5), q(0.9), q(0.99), lengths[len(lengths)-1])
	t.Logf("idle %.4g node-hours, mean idle %.2f%% of the machine; report %+v",
		tr.IdleNodeSeconds()/3600, 100*tr.MeanIdleFraction(), tr.Report)
}

func TestRealSummitIdleEvents(t *testing.T) {
	tr := readReal(t, "summit-idle-2021-02-10_14.csv", func(f io.Reader) (*Trace, error) {
		return ReadIdleEvents(f, SourceOptions{})
	})
	checkTrace(t, tr, 0)
	if tr.Size != 4734 || tr.Report.DeclaredNodes != 4734 {
		t.Errorf("Size %d, declared %d; want 4734", tr.Size, tr.Report.DeclaredNodes)
	}
	if f := tr.MeanIdleFraction(); f < 0.06 || f > 0.10 {
		t.Errorf("mean idle fraction %.3f, want about 0.08 (README)", f)
	}
	logHoles(t, tr)
	min := readReal(t, "summit-idle-2021-02-10_14.csv", func(f io.Reader) (*Trace, error) {
		return ReadIdleEvents(f, SourceOptions{MinHole: 120})
	})
	checkTrace(t, min, 120)
	t.Logf("MinHole 120 s: dropped %d holes, %.3g%% of idle node-seconds", min.Report.DroppedHoles, 100*min.Report.DroppedNodeSeconds/tr.IdleNodeSeconds())
}

func TestRealThetaSWF(t *testing.T) {
	tr := readReal(t, "theta-2022.swf", func(f io.Reader) (*Trace, error) {
		return ReadSWF(f, SourceOptions{})
	})
	if tr.Report.Jobs != 23911 || tr.Size != 4360 || len(tr.Nodes) != 4360 {
		t.Errorf("jobs %d, size %d, nodes %d; want 23911, 4360, 4360", tr.Report.Jobs, tr.Size, len(tr.Nodes))
	}
	if testing.Short() {
		t.Skip("skipping invariant check of a year of Theta in -short mode")
	}
	checkTrace(t, tr, 0)
	logHoles(t, tr)
}
