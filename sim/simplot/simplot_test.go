package simplot

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/sim"
)

// Hand-checkable: 10 nodes idle on [0, 100), 4 on [100, 400); two bins of
// 200 s: the first is (10·100 + 4·100)/200 = 7, the second 4.
func TestStepMeans(t *testing.T) {
	series := []sim.SeriesPoint{{Time: 0, Idle: 10}, {Time: 100, Idle: 4}}
	got := StepMeans(series, func(s sim.SeriesPoint) float64 { return float64(s.Idle) }, 0, 400, 2)
	require.Len(t, got, 2)
	require.InDelta(t, 7, got[0].Y, 1e-12)
	require.InDelta(t, 4, got[1].Y, 1e-12)
	require.InDelta(t, 100.0/3600, got[0].X, 1e-12) // bin middle, in hours
	// A bin the series does not reach repeats the last mean.
	got = StepMeans(series[:1], func(s sim.SeriesPoint) float64 { return float64(s.Idle) }, -200, 200, 2)
	require.Equal(t, 0.0, got[0].Y)
	require.Equal(t, 10.0, got[1].Y)
}

func TestCumulativeInterpolates(t *testing.T) {
	series := []sim.SeriesPoint{{Time: 0, Samples: 0}, {Time: 100, Samples: 50}, {Time: 200, Samples: 50}}
	got := Cumulative(series, 0, 200, 4)
	require.Len(t, got, 5)
	want := []float64{0, 25, 50, 50, 50}
	for i, w := range want {
		require.InDelta(t, w, got[i].Y, 1e-12, "point %d", i)
	}
}

func TestECDF(t *testing.T) {
	got := ECDF([]float64{3, 1, 2, 0}, 10, 0.5)
	require.Equal(t, []float64{0.5, 1, 2, 3}, []float64{got[0].X, got[1].X, got[2].X, got[3].X})
	require.Equal(t, 1.0, got[len(got)-1].Y)
	// Thinned to about points+1 points, always ending at share 1.
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i)
	}
	got = ECDF(xs, 10, 0)
	require.LessOrEqual(t, len(got), 11)
	require.Equal(t, 1.0, got[len(got)-1].Y)
	require.Nil(t, ECDF(nil, 10, 0))
}

func replay(t *testing.T, policy allocator.Formulation) *sim.Result {
	t.Helper()
	nodes := func(ids ...string) []string { return ids }
	events := []sim.Event{
		{Time: 0, Idle: nodes("a", "b", "c", "d")},
		{Time: 600, Busy: nodes("c", "d")},
		{Time: 1800, Idle: nodes("c")},
		{Time: 3600},
	}
	curve := allocator.Curve{{Nodes: 1, Throughput: 10}, {Nodes: 2, Throughput: 18}, {Nodes: 3, Throughput: 24}, {Nodes: 4, Throughput: 28}}
	jobs := []sim.Job{
		{Name: "j1", MinNodes: 1, MaxNodes: 4, TotalSamples: 30000, RescaleUp: 10, RescaleDown: 5, Curve: curve},
		{Name: "j2", MinNodes: 1, MaxNodes: 4, TotalSamples: 30000, RescaleUp: 10, RescaleDown: 5, Curve: curve, Submit: 300},
	}
	res, err := sim.Run(events, jobs, sim.Config{Policy: policy})
	require.NoError(t, err)
	return res
}

func TestWriteBothFormats(t *testing.T) {
	runs := []Run{{"compact", replay(t, allocator.FormulationCompact)}, {"equal", replay(t, allocator.FormulationEqual)}}
	for _, format := range []string{PNG, SVG} {
		dir := t.TempDir()
		paths, err := Write(dir, runs, Options{Format: format, Title: "tiny"})
		require.NoError(t, err)
		require.Len(t, paths, 3)
		for i, name := range []string{FigureNodes, FigureSamples, FigureSolver} {
			require.Equal(t, filepath.Join(dir, name+"."+format), paths[i])
			b, err := os.ReadFile(paths[i])
			require.NoError(t, err)
			switch format {
			case PNG:
				img, err := png.Decode(bytes.NewReader(b))
				require.NoError(t, err, name)
				require.Greater(t, img.Bounds().Dx(), 400)
			case SVG:
				require.Contains(t, string(b), "<svg")
				require.True(t, strings.Contains(string(b), "compact"), "%s names the policies", name)
			}
		}
	}
}

func TestWriteErrors(t *testing.T) {
	_, err := Write(t.TempDir(), nil, Options{})
	require.ErrorIs(t, err, ErrNothingToPlot)
	_, err = Write(t.TempDir(), []Run{{"x", replay(t, "")}}, Options{Format: "gif"})
	require.ErrorContains(t, err, `format "gif"`)
	_, err = Write(t.TempDir(), []Run{{"x", replay(t, "")}, {"y", nil}}, Options{})
	require.ErrorContains(t, err, "runs[1] (y)")
}
