// Command gennas writes the tabular NAS benchmark `gleaner bench search`
// replays (internal/searchbench/curves/nas-cell.csv): every architecture
// of a small NAS-Bench-201-style cell space (4 nodes, operations none,
// skip_connect, conv_1x1 and conv_3x3; 4^6 = 4,096 cells, 1,948 after
// package nas's canonical form), each trained by the NAS example
// (examples/pytorch-nas) on scikit-learn's digits for 8 epochs at lr 0.01,
// once per training seed (--seeds, default 1 and 2), with the means of its
// validation loss and accuracy and its training time after 1, 2, 4 and 8
// epochs, its parameter count and multiply-adds. --model also fits the
// architecture throughput model on the table (--fit-only: on the existing
// one).
//
//	go run ./internal/searchbench/gennas --python /usr/bin/python3 --out internal/searchbench/curves/nas-cell.csv
//
// The architectures are trained by examples/pytorch-nas/bench.py, the
// trainer's own network and training loop in one long-lived process per
// core (one thread each), so that starting Python with torch does not
// cost more than training. About 35 minutes (two seeds) on this
// project's 2 cores.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/nas"
)

// The benchmark's space: NAS-Bench-201's cell with 4 of its 5 operations
// (avg_pool_3x3 left out, to keep the space small enough to train whole).
var (
	ops    = []string{"none", "skip_connect", "conv_1x1", "conv_3x3"}
	space  = hpo.CellSpace{Nodes: 4, Ops: ops, Stacks: 2, Cells: 1, Channels: 8}
	epochs = "1,2,4,8"
	batch  = 64 // bench.py's default
)

// result is one line of bench.py.
type result struct {
	Arch   string  `json:"arch"`
	Params float64 `json:"params"`
	Flops  float64 `json:"flops"`
	Points []struct {
		Epochs      int     `json:"epochs"`
		Samples     float64 `json:"samples"`
		ValLoss     float64 `json:"val_loss"`
		ValAccuracy float64 `json:"val_accuracy"`
		Seconds     float64 `json:"seconds"`
	} `json:"points"`
}

func main() {
	python := flag.String("python", "/usr/bin/python3", "a python3 with torch and sklearn")
	out := flag.String("out", "internal/searchbench/curves/nas-cell.csv", "the table to write")
	procs := flag.Int("procs", runtime.NumCPU(), "training processes (one thread each)")
	sample := flag.Int("sample", 0, "train only N architectures drawn at random, seed 1 (0: all; for a quick look)")
	seedList := flag.String("seeds", "1,2", "training seeds; each architecture is trained once per seed and the table holds the means")
	lr := flag.Float64("lr", 0.01, "SGD learning rate (0.05, the trainer's default, leaves the 8-epoch loss to seed noise: docs/nas.md)")
	model := flag.String("model", "", "also fit the architecture throughput model (nas.FitThroughput) on the table and write it here as JSON (a worker's --throughput-model)")
	fitOnly := flag.Bool("fit-only", false, "train nothing: fit --model on the existing --out table")
	flag.Parse()

	if *fitOnly {
		if *model == "" {
			fail(fmt.Errorf("--fit-only needs --model"))
		}
		if err := fitModel(*out, *model); err != nil {
			fail(err)
		}
		return
	}
	seeds, err := parseSeeds(*seedList)
	if err != nil {
		fail(err)
	}
	archs, err := enumerate()
	if err != nil {
		fail(err)
	}
	if *sample > 0 && *sample < len(archs) {
		r := rand.New(rand.NewPCG(1, 0))
		r.Shuffle(len(archs), func(i, j int) { archs[i], archs[j] = archs[j], archs[i] })
		archs = archs[:*sample]
		sort.Strings(archs)
	}
	fmt.Fprintf(os.Stderr, "gennas: %d architectures × %d seeds, %d processes\n", len(archs), len(seeds), *procs)
	start := time.Now()
	runs := make([][]result, len(seeds))
	for k, seed := range seeds {
		if runs[k], err = trainAll(*python, archs, seed, *lr, *procs, start); err != nil {
			fail(err)
		}
	}
	results, err := mean(runs)
	if err != nil {
		fail(err)
	}
	if err := write(*out, archs, seeds, *lr, results, time.Since(start)); err != nil {
		fail(err)
	}
	if *model != "" {
		if err := fitModel(*out, *model); err != nil {
			fail(err)
		}
	}
}

// fitModel fits the throughput model on every architecture of the table
// (each at its fastest interval, nas.BenchmarkArch.Rate), with the
// all-reduce measured on this project's VM (nas.DefaultAllReduce), and
// writes it as JSON.
func fitModel(table, out string) error {
	f, err := os.Open(table)
	if err != nil {
		return err
	}
	defer f.Close()
	archs, err := nas.ReadBenchmark(f, space.Stacks, space.Cells, space.Channels)
	if err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	samples := make([]nas.ThroughputSample, len(archs))
	for i, a := range archs {
		samples[i] = nas.ThroughputSample{Arch: a.Arch, Batch: batch, SamplesPerSecond: a.Rate}
	}
	m, err := nas.FitThroughput(samples)
	if err != nil {
		return fmt.Errorf("fitting on %s: %w", table, err)
	}
	m.AllReduce = nas.DefaultAllReduce
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gennas: throughput model fitted on %d architectures (in-sample median error %.1f %%) -> %s\n",
		len(archs), 100*m.Fit.MedianAPE, out)
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

func parseSeeds(list string) ([]int, error) {
	var seeds []int
	for _, f := range strings.Split(list, ",") {
		s, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || s < 1 {
			return nil, fmt.Errorf("--seeds: %q is not a whole number ≥ 1", f)
		}
		if slices.Contains(seeds, s) {
			return nil, fmt.Errorf("--seeds: %d twice", s)
		}
		seeds = append(seeds, s)
	}
	return seeds, nil
}

// trainAll trains every architecture with one seed, procs processes.
func trainAll(python string, archs []string, seed int, lr float64, procs int, start time.Time) ([]result, error) {
	results := make([]result, len(archs))
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	errs := make(chan error, procs)
	for p := 0; p < procs; p++ {
		var shard []int
		for i := p; i < len(archs); i += procs {
			shard = append(shard, i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := train(python, archs, seed, lr, shard, func(i int, r result) {
				mu.Lock()
				defer mu.Unlock()
				results[i] = r
				done++
				if done%50 == 0 || done == len(archs) {
					fmt.Fprintf(os.Stderr, "gennas: seed %d: %d/%d trained (%s)\n", seed, done, len(archs), time.Since(start).Round(time.Second))
				}
			})
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return results, <-errs
}

// mean averages each architecture's metrics over the seeds' runs.
func mean(runs [][]result) ([]result, error) {
	out := slices.Clone(runs[0])
	for i := range out {
		out[i].Points = slices.Clone(runs[0][i].Points)
		for _, run := range runs[1:] {
			r := run[i]
			if r.Arch != out[i].Arch || r.Params != out[i].Params || len(r.Points) != len(out[i].Points) {
				return nil, fmt.Errorf("bench.py: seeds disagree on %s's size or epochs", out[i].Arch)
			}
			for j, pt := range r.Points {
				q := &out[i].Points[j]
				q.ValLoss += pt.ValLoss
				q.ValAccuracy += pt.ValAccuracy
				q.Seconds += pt.Seconds
			}
		}
		n := float64(len(runs))
		for j := range out[i].Points {
			q := &out[i].Points[j]
			q.ValLoss, q.ValAccuracy, q.Seconds = q.ValLoss/n, q.ValAccuracy/n, q.Seconds/n
		}
	}
	return out, nil
}

// enumerate lists the space's canonical architectures, sorted.
func enumerate() ([]string, error) {
	a, err := nas.New(hpo.ArchSpec{Cell: &space})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	edges := 6
	n := 1
	for range edges {
		n *= len(ops)
	}
	for code := range n {
		e := make([]string, edges)
		c := code
		for k := range e {
			e[k] = ops[c%len(ops)]
			c /= len(ops)
		}
		raw := fmt.Sprintf(`{"cell":{"nodes":4,"edges":[[%q],[%q,%q],[%q,%q,%q]],"stacks":%d,"cells":%d,"channels":%d}}`,
			e[0], e[1], e[2], e[3], e[4], e[5], space.Stacks, space.Cells, space.Channels)
		canon, err := a.Canonical(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", raw, err)
		}
		seen[canon] = true
	}
	archs := make([]string, 0, len(seen))
	for s := range seen {
		archs = append(archs, s)
	}
	sort.Strings(archs)
	return archs, nil
}

// train runs bench.py on the architectures of shard (indexes into archs).
func train(python string, archs []string, seed int, lr float64, shard []int, got func(int, result)) error {
	cmd := exec.Command(python, "examples/pytorch-nas/bench.py", "--epochs", epochs, "--seed", strconv.Itoa(seed),
		"--lr", strconv.FormatFloat(lr, 'g', -1, 64))
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", python, err)
	}
	go func() {
		for _, i := range shard {
			io.WriteString(in, archs[i]+"\n")
		}
		in.Close()
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	k := 0
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("bench.py: %v: %s", err, sc.Text())
		}
		if k >= len(shard) {
			return fmt.Errorf("bench.py: more results than architectures")
		}
		got(shard[k], r)
		k++
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("bench.py: %w", err)
	}
	if k != len(shard) {
		return fmt.Errorf("bench.py: %d results for %d architectures", k, len(shard))
	}
	return nil
}

func write(path string, archs []string, seeds []int, lr float64, results []result, took time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Tabular NAS benchmark: every architecture of a NAS-Bench-201-style cell space (4 nodes; %s;\n", strings.Join(ops, ", "))
	fmt.Fprintf(&b, "# stacks %d, cells %d, channels %d): %d canonical cells (package nas), each trained by examples/pytorch-nas\n",
		space.Stacks, space.Cells, space.Channels, len(archs))
	fmt.Fprintf(&b, "# (bench.py: its network and loop, one thread) on scikit-learn's digits (1,437 train / 360 validation),\n")
	fmt.Fprintf(&b, "# SGD lr %g, momentum 0.9, weight decay 5e-4, batch 64; metrics after %s epochs, each the mean over training seeds %s.\n",
		lr, epochs, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(seeds)), ","), "[]"))
	fmt.Fprintf(&b, "# arch is the NAS-Bench-201 string; seconds: training time so far on one core (evaluation excluded).\n")
	fmt.Fprintf(&b, "# Generated by: go run ./internal/searchbench/gennas (%s, %s/%s, %s).\n",
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, took.Round(time.Second))
	b.WriteString("hash,arch,params,flops,epochs,samples,val_loss,val_accuracy,seconds\n")
	for i, a := range archs {
		p, err := nas.Parse(a)
		if err != nil {
			return err
		}
		r := results[i]
		for _, pt := range r.Points {
			fmt.Fprintf(&b, "%s,%s,%.0f,%.0f,%d,%.0f,%.6g,%.6g,%.4g\n", nas.Hash(a), p.String(), r.Params, r.Flops,
				pt.Epochs, pt.Samples, pt.ValLoss, pt.ValAccuracy, pt.Seconds)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gennas:", err)
	os.Exit(1)
}
