package cli

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func learned(trial, campaign, model string, batch int, typ string, at time.Time, pts ...float64) workflows.LearnedCurve {
	c := workflows.LearnedCurve{Trial: trial, Campaign: campaign, Model: model, Batch: batch, NodeType: typ, At: at}
	for i, x := range pts {
		c.Points = append(c.Points, workflows.CurvePoint{Nodes: 1 << i, Throughput: x})
	}
	return c
}

// The export is a --prior-curves directory: what the worker loads from it
// is the library's curves (one per model, batch and node type: the most
// measured), with their model, batch, node type and throughputs exact.
func TestPoolLibraryExportRoundTrips(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	lib := []workflows.LearnedCurve{
		learned("c1-t1", "c1", "resnet50", 64, "a100", t0, 1000.5, 1900.25, 3500.125),
		learned("c1-t2", "c1", "resnet50", 64, "a100", t0.Add(time.Hour), 1010, 1890), // fewer counts: not exported
		learned("c1-t3", "c1", "resnet50", 128, "a100", t0, 1800, 3400),
		learned("c2-t1", "c2", "bert", 0, "", t0, 300, 590, 1100, 2000), // batch unknown, untyped nodes
		learned("c3-t1", "c3", "", 0, "a100", t0, 10, 20),               // no model: left out
		learned("c4-t1", "c4", "../evil", 8, "a100", t0, 10, 20),        // cannot name a file
		learned("c5-t1", "c5", "a__b", 8, "a100", t0, 10, 20),           // would read back as model "a"
	}
	files, skipped := scalingFiles(lib)
	require.Len(t, skipped, 3, "%q", skipped)
	dir := t.TempDir()
	require.NoError(t, writeScalingDir(dir, files, false))
	names, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	require.Equal(t, []string{filepath.Join(dir, "bert__.csv"), filepath.Join(dir, "resnet50__a100.csv")}, names)

	got, err := worker.LoadPriorCurves(dir)
	require.NoError(t, err)
	type curve struct {
		Model, NodeType string
		Batch           int
		Points          []jpa.Point
	}
	var back []curve
	for _, c := range got {
		require.Empty(t, c.Group, "a site file's curves are profiled models")
		back = append(back, curve{c.Model, c.NodeType, c.Batch, c.Points})
	}
	pts := func(c workflows.LearnedCurve) []jpa.Point {
		var out []jpa.Point
		for _, p := range c.Points {
			out = append(out, jpa.Point{Nodes: p.Nodes, Throughput: p.Throughput})
		}
		return out
	}
	require.Equal(t, []curve{
		{"bert", "", 1, pts(lib[3])},
		{"resnet50", "a100", 64, pts(lib[0])},
		{"resnet50", "a100", 128, pts(lib[2])},
	}, back)

	require.Error(t, writeScalingDir(dir, files, false), "an existing file is not overwritten")
	require.NoError(t, writeScalingDir(dir, files, true))
}

func TestWritePoolLibrary(t *testing.T) {
	var b bytes.Buffer
	writePoolLibrary(&b, workflows.PoolLibrary{Name: "p", Curves: []workflows.LearnedCurve{
		learned("c1-t1", "c1", "resnet50", 64, "a100", time.Unix(0, 0), 1, 2, 3),
	}})
	require.Contains(t, b.String(), "library   1 curves")
	require.Regexp(t, `resnet50\s+64\s+a100\s+c1\s+c1-t1\s+1,2,4`, b.String())
}
