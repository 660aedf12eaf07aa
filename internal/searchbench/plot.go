package searchbench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot draws one figure per objective into dir (created if missing): each
// algorithm's median regret (best − optimum, log scale) against finished
// trials, with its quartiles as a band. format is "png" or "svg". It
// returns the files written.
func Plot(dir, format string, curves []Curve, objectives []Objective) ([]string, error) {
	if format != "png" && format != "svg" {
		return nil, fmt.Errorf("plot format %q: want png or svg", format)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, o := range objectives {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: best found − optimum (median, quartiles)", o.Name)
		p.X.Label.Text = "trials finished"
		p.Y.Label.Text = "regret"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top = true
		i := 0
		for _, c := range curves {
			if c.Objective != o.Name {
				continue
			}
			med, band := make(plotter.XYs, len(c.Best)), make(plotter.XYs, 0, 2*len(c.Best))
			regret := func(v float64) float64 { return math.Max(v-o.Optimum, 1e-9) }
			for n, q := range c.Best {
				med[n] = plotter.XY{X: float64(n + 1), Y: regret(q.Median)}
				band = append(band, plotter.XY{X: float64(n + 1), Y: regret(q.Q1)})
			}
			for n := len(c.Best) - 1; n >= 0; n-- {
				band = append(band, plotter.XY{X: float64(n + 1), Y: regret(c.Best[n].Q3)})
			}
			col := plotutil.Color(i)
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return files, err
			}
			r, g, b, _ := col.RGBA()
			poly.Color = rgba(r, g, b, 0x30)
			poly.LineStyle.Width = 0
			line, err := plotter.NewLine(med)
			if err != nil {
				return files, err
			}
			line.Color = col
			line.Width = vg.Points(1.5)
			p.Add(poly, line)
			p.Legend.Add(c.Algorithm, line)
			i++
		}
		path := filepath.Join(dir, "search-"+o.Name+"."+format)
		if err := p.Save(7*vg.Inch, 4*vg.Inch, path); err != nil {
			return files, fmt.Errorf("writing %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}

func rgba(r, g, b uint32, a uint8) color.NRGBA {
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}
