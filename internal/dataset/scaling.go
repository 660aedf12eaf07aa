package dataset

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gleaner-hpc/gleaner/curve"
	"github.com/gleaner-hpc/gleaner/data"
)

// ScalingRow is one line of a scaling CSV: the median throughput of an
// application at one node count and one per-GPU (local) batch size.
type ScalingRow struct {
	Nodes       int
	GPUsPerNode int
	LocalBatch  int
	StepTime    float64 // seconds per step
	SamplesPerS float64
}

// ScalingCurve and ScalingPoint are the measured curves of package curve
// (curve.Scaling), which the public packages that take them name.
type (
	ScalingCurve = curve.Scaling
	ScalingPoint = curve.ScalingPoint
)

var scalingHeader = []string{"nodes", "gpus_per_node", "local_bsz", "step_time_s", "samples_per_s"}

// ReadScaling parses a scaling CSV. Errors name the line and the column.
func ReadScaling(r io.Reader) ([]ScalingRow, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(scalingHeader)
	cr.Comment = '#'
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	for i, want := range scalingHeader {
		if strings.TrimSpace(header[i]) != want {
			return nil, fmt.Errorf("header column %d is %q, want %q", i+1, header[i], want)
		}
	}
	var rows []ScalingRow
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		row, err := parseScalingRecord(rec)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func parseScalingRecord(rec []string) (ScalingRow, error) {
	var row ScalingRow
	ints := []*int{&row.Nodes, &row.GPUsPerNode, &row.LocalBatch}
	for i, dst := range ints {
		v, err := strconv.Atoi(strings.TrimSpace(rec[i]))
		if err != nil || v <= 0 {
			return row, fmt.Errorf("%s: %q is not a positive integer", scalingHeader[i], rec[i])
		}
		*dst = v
	}
	floats := []*float64{&row.StepTime, &row.SamplesPerS}
	for i, dst := range floats {
		col := len(ints) + i
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[col]), 64)
		if err != nil || !(v > 0) || v > 1e300 {
			return row, fmt.Errorf("%s: %q is not a positive number", scalingHeader[col], rec[col])
		}
		*dst = v
	}
	return row, nil
}

// CurvesFromRows groups rows by local batch size into curves sorted by
// local batch size, each sorted by node count. A repeated node count within
// one batch size keeps the first row.
func CurvesFromRows(file string, rows []ScalingRow) []ScalingCurve {
	base := filepath.Base(file)
	app, cluster := splitScalingName(base)
	byBatch := map[int]*ScalingCurve{}
	var batches []int
	for _, r := range rows {
		c, ok := byBatch[r.LocalBatch]
		if !ok {
			c = &ScalingCurve{File: base, App: app, Cluster: cluster, GPUsPerNode: r.GPUsPerNode, LocalBatch: r.LocalBatch}
			byBatch[r.LocalBatch] = c
			batches = append(batches, r.LocalBatch)
		}
		dup := false
		for _, p := range c.Points {
			if p.Nodes == r.Nodes {
				dup = true
				break
			}
		}
		if !dup {
			c.Points = append(c.Points, ScalingPoint{Nodes: r.Nodes, SamplesPerS: r.SamplesPerS})
		}
	}
	sort.Ints(batches)
	curves := make([]ScalingCurve, 0, len(batches))
	for _, b := range batches {
		c := byBatch[b]
		sort.Slice(c.Points, func(i, k int) bool { return c.Points[i].Nodes < c.Points[k].Nodes })
		curves = append(curves, *c)
	}
	return curves
}

func splitScalingName(base string) (app, cluster string) {
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	if i := strings.Index(stem, "__"); i >= 0 {
		return stem[:i], stem[i+2:]
	}
	return stem, ""
}

// LoadScaling reads every *.csv of the folder name, in file-name order:
// a directory on disk or, with data.Prefix, a folder of the built-in
// reference data (data.Prefix + data.Scaling). Errors name the file.
func LoadScaling(name string) ([]ScalingCurve, error) {
	fsys, err := data.Dir(name)
	if err != nil {
		return nil, err
	}
	return loadScaling(fsys, name)
}

// LoadScalingDir reads every *.csv in the directory dir on disk, in
// file-name order. Errors name the file.
func LoadScalingDir(dir string) ([]ScalingCurve, error) {
	return loadScaling(os.DirFS(dir), dir)
}

// LoadScalingFS reads every *.csv at the root of fsys, in file-name order:
// for example data.Dir(data.Prefix + data.Scaling), the built-in curves.
// Errors name the file.
func LoadScalingFS(fsys fs.FS) ([]ScalingCurve, error) {
	return loadScaling(fsys, "")
}

// loadScaling reads the *.csv files of fsys; dir, when not empty, is where
// fsys lives on disk, for error messages.
func loadScaling(fsys fs.FS, dir string) ([]ScalingCurve, error) {
	files, err := fs.Glob(fsys, "*.csv")
	if err != nil {
		return nil, err
	}
	where := dir
	if where == "" {
		where = "the scaling folder"
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.csv scaling files in %s", where)
	}
	sort.Strings(files)
	var curves []ScalingCurve
	for _, name := range files {
		label := name
		if dir != "" {
			label = filepath.Join(dir, name)
		}
		f, err := fsys.Open(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		cs, err := readScalingCurves(f, label)
		f.Close()
		if err != nil {
			return nil, err
		}
		curves = append(curves, cs...)
	}
	return curves, nil
}

// LoadScalingFile reads one scaling CSV into curves.
func LoadScalingFile(path string) ([]ScalingCurve, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readScalingCurves(f, path)
}

// readScalingCurves parses one scaling CSV named path (its base name gives
// the application and cluster).
func readScalingCurves(r io.Reader, path string) ([]ScalingCurve, error) {
	rows, err := ReadScaling(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return CurvesFromRows(path, rows), nil
}
