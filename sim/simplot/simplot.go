// Package simplot draws the figures of a simulator replay (package sim)
// with gonum/plot: the idle nodes over time with the nodes each policy
// used, the cumulative samples each policy trained, and the distribution
// of the allocator's solve times. It reads sim.Result and writes files;
// it knows nothing of how the replay was made.
package simplot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/gleaner-hpc/gleaner/sim"
)

// Formats Write accepts.
const (
	PNG = "png"
	SVG = "svg"
)

// Bins is how many time bins a series is averaged into: enough for a
// figure, few enough that a year of decisions stays a small file.
const Bins = 1000

// Figure names, without the extension.
const (
	FigureNodes   = "nodes"
	FigureSamples = "samples"
	FigureSolver  = "solver"
)

// Run is one replay to draw: Label names it in legends (a policy, or
// "compact/jpa").
type Run struct {
	Label  string
	Result *sim.Result
}

// Options shape the figures. Zero fields take defaults.
type Options struct {
	// Format is PNG or SVG (default PNG).
	Format string
	// Title prefixes every figure's title, e.g. the trace's name.
	Title string
	// Width and Height of each figure (default 8 × 4 inches).
	Width, Height vg.Length
}

// ErrNothingToPlot is returned when there is no run, or a run has no
// series to draw.
var ErrNothingToPlot = errors.New("simplot: nothing to plot")

// Write draws the three figures of runs into dir (created if missing)
// and returns the paths written: nodes (idle nodes over time, with the
// nodes each run used; time-weighted means over Bins bins), samples
// (cumulative useful samples of each run) and solver (the empirical
// distribution of each run's solve times, log scale).
func Write(dir string, runs []Run, opts Options) ([]string, error) {
	switch opts.Format {
	case "":
		opts.Format = PNG
	case PNG, SVG:
	default:
		return nil, fmt.Errorf("simplot: format %q: want %q or %q", opts.Format, PNG, SVG)
	}
	if opts.Width == 0 {
		opts.Width = 8 * vg.Inch
	}
	if opts.Height == 0 {
		opts.Height = 4 * vg.Inch
	}
	if len(runs) == 0 {
		return nil, ErrNothingToPlot
	}
	for i, r := range runs {
		if r.Result == nil {
			return nil, fmt.Errorf("simplot: runs[%d] (%s): no result", i, r.Label)
		}
		if len(r.Result.Series) == 0 {
			return nil, fmt.Errorf("%w: runs[%d] (%s) has no series", ErrNothingToPlot, i, r.Label)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	figures := []struct {
		name string
		draw func([]Run, Options) (*plot.Plot, error)
	}{
		{FigureNodes, nodesFigure},
		{FigureSamples, samplesFigure},
		{FigureSolver, solverFigure},
	}
	var paths []string
	for _, f := range figures {
		p, err := f.draw(runs, opts)
		if err != nil {
			return paths, fmt.Errorf("simplot: %s: %w", f.name, err)
		}
		path := filepath.Join(dir, f.name+"."+opts.Format)
		if err := p.Save(opts.Width, opts.Height, path); err != nil {
			return paths, fmt.Errorf("simplot: writing %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func title(opts Options, what string) string {
	if opts.Title == "" {
		return what
	}
	return opts.Title + ": " + what
}

// window is the span of the first run, which every run shares.
func window(runs []Run) (start, end float64) {
	m := runs[0].Result.Metrics
	return m.Start, m.End
}

func timeAxis(p *plot.Plot, start float64) {
	p.X.Label.Text = "hours since " + time.Unix(int64(start), 0).UTC().Format("2006-01-02 15:04 UTC")
}

func newPlot(opts Options, what string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title(opts, what)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.ThumbnailWidth = vg.Points(20)
	p.Add(plotter.NewGrid())
	return p
}

// addRuns draws one line per run, xys of its result, styled by its index.
func addRuns(p *plot.Plot, runs []Run, legend string, xys func(*sim.Result) plotter.XYs) error {
	for i, r := range runs {
		l, err := plotter.NewLine(xys(r.Result))
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(r.Label+legend, l)
	}
	return nil
}

// timePlot is a figure over the runs' window: hours on x, y from 0.
func timePlot(runs []Run, opts Options, what, ylabel string) (p *plot.Plot, start, end float64) {
	start, end = window(runs)
	p = newPlot(opts, what)
	timeAxis(p, start)
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	return p, start, end
}

func nodesFigure(runs []Run, opts Options) (*plot.Plot, error) {
	p, start, end := timePlot(runs, opts, "idle nodes and the nodes each policy used", "nodes (mean per bin)")
	idle, err := plotter.NewLine(StepMeans(runs[0].Result.Series, func(s sim.SeriesPoint) float64 { return float64(s.Idle) }, start, end, Bins))
	if err != nil {
		return nil, err
	}
	idle.Color = color.Gray{Y: 150}
	idle.Width = vg.Points(2)
	idle.FillColor = color.Gray{Y: 230}
	p.Add(idle)
	p.Legend.Add("idle", idle)
	err = addRuns(p, runs, " used", func(r *sim.Result) plotter.XYs {
		return StepMeans(r.Series, func(s sim.SeriesPoint) float64 { return float64(s.Used) }, start, end, Bins)
	})
	return p, err
}

func samplesFigure(runs []Run, opts Options) (*plot.Plot, error) {
	p, start, end := timePlot(runs, opts, "samples trained", "cumulative useful samples")
	err := addRuns(p, runs, "", func(r *sim.Result) plotter.XYs { return Cumulative(r.Series, start, end, Bins) })
	return p, err
}

// minSolverMs is where the log axis of solve times starts: a faster
// solve is drawn there.
const minSolverMs = 1e-3

func solverFigure(runs []Run, opts Options) (*plot.Plot, error) {
	p := newPlot(opts, "allocator solve time")
	p.X.Label.Text = "solve time (ms, log scale)"
	p.Y.Label.Text = "share of decisions solved within"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	drawn := 0
	for i, r := range runs {
		xys := ECDF(r.Result.SolverMs, Bins, minSolverMs)
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Dashes, l.Width = plotutil.Color(i), plotutil.Dashes(i), vg.Points(1.2)
		l.StepStyle = plotter.PostStep
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (p50 %.2g ms, p99 %.2g ms)", r.Label, r.Result.Metrics.SolverMsP50, r.Result.Metrics.SolverMsP99), l)
		drawn++
	}
	if drawn == 0 {
		// No decision at all: an empty axis says so better than an error.
		p.X.Scale, p.X.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
		p.X.Min, p.X.Max = 0, 1
	}
	return p, nil
}

// StepMeans averages a step function over bins of [start, end): the
// value of series point i holds from its time until the next point's
// (the last until end), and each bin's mean is weighted by time. It
// returns one point per bin, at the bin's middle, in hours since start.
// Bins with no covered time repeat the previous bin's mean.
func StepMeans(series []sim.SeriesPoint, value func(sim.SeriesPoint) float64, start, end float64, bins int) plotter.XYs {
	if bins < 1 || !(end > start) {
		return nil
	}
	width := (end - start) / float64(bins)
	sum := make([]float64, bins)
	cov := make([]float64, bins)
	for i, s := range series {
		from, to := math.Max(s.Time, start), end
		if i+1 < len(series) {
			to = math.Min(series[i+1].Time, end)
		}
		if !(to > from) {
			continue
		}
		v := value(s)
		for b := int((from - start) / width); b < bins; b++ {
			lo, hi := start+float64(b)*width, start+float64(b+1)*width
			if lo >= to {
				break
			}
			d := math.Min(hi, to) - math.Max(lo, from)
			if d > 0 {
				sum[b] += v * d
				cov[b] += d
			}
		}
	}
	out := make(plotter.XYs, bins)
	prev := 0.0
	for b := range out {
		out[b].X = (float64(b) + 0.5) * width / 3600
		if cov[b] > 0 {
			prev = sum[b] / cov[b]
		}
		out[b].Y = prev
	}
	return out
}

// Cumulative samples series' Samples at bins+1 evenly spaced instants of
// [start, end], interpolated linearly between series points (progress is
// linear between two decisions but for rescale stalls), in hours since
// start.
func Cumulative(series []sim.SeriesPoint, start, end float64, bins int) plotter.XYs {
	if bins < 1 || !(end > start) || len(series) == 0 {
		return nil
	}
	out := make(plotter.XYs, bins+1)
	i := 0
	for b := range out {
		t := start + (end-start)*float64(b)/float64(bins)
		for i+1 < len(series) && series[i+1].Time <= t {
			i++
		}
		y := series[i].Samples
		if t < series[i].Time {
			y = 0 // before the first point nothing was trained
		} else if i+1 < len(series) && series[i+1].Time > series[i].Time {
			f := (t - series[i].Time) / (series[i+1].Time - series[i].Time)
			y += f * (series[i+1].Samples - series[i].Samples)
		}
		out[b] = plotter.XY{X: (t - start) / 3600, Y: y}
	}
	return out
}

// ECDF is the empirical distribution of xs — (x, share of values ≤ x) —
// at most points+1 points (evenly spaced ranks), with values below floor
// drawn at floor.
func ECDF(xs []float64, points int, floor float64) plotter.XYs {
	if len(xs) == 0 || points < 1 {
		return nil
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	step := max(1, n/points)
	var out plotter.XYs
	for i := 0; i < n; i += step {
		out = append(out, plotter.XY{X: math.Max(s[i], floor), Y: float64(i+1) / float64(n)})
	}
	if out[len(out)-1].Y < 1 {
		out = append(out, plotter.XY{X: math.Max(s[n-1], floor), Y: 1})
	}
	return out
}
