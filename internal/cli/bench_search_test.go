package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBenchSearchTableJSONAndPlot(t *testing.T) {
	out, progress, err := runCLI(t, "bench", "search", "--algorithms", "random,quasirandom", "--objectives", "branin,mixed",
		"--trials", "30", "--seeds", "3", "--at", "10,30")
	require.NoError(t, err)
	require.Contains(t, progress, "bench search: quasirandom on mixed, 3 seeds")
	require.Contains(t, out, "best found after N trials: median [q1, q3] over 3 seeds; 8 workers")
	require.Regexp(t, `branin\s+0\.397887\s+random\s+[0-9.e+-]+ \[`, out)

	dir := t.TempDir()
	out, _, err = runCLI(t, "bench", "search", "--algorithms", "grid", "--objectives", "branin", "--trials", "12",
		"--seeds", "2", "--json", "--plot", dir, "--plot-format", "png")
	require.NoError(t, err)
	var curves []struct {
		Algorithm string `json:"algorithm"`
		Best      []struct{ Median float64 }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &curves))
	require.Len(t, curves, 1)
	require.Len(t, curves[0].Best, 12)
	st, err := os.Stat(filepath.Join(dir, "search-branin.png"))
	require.NoError(t, err)
	require.Positive(t, st.Size())
}

// The promotion variants and PBT run on the stateful toy problem; PBT is
// skipped, with a note, on an objective without training state.
func TestBenchSearchPromotionAndPBT(t *testing.T) {
	out, progress, err := runCLI(t, "bench", "search", "--algorithms", "asha-promotion,hyperband-promotion,pbt",
		"--objectives", "pbt-toy,go-mlp", "--trials", "20", "--seeds", "2", "--at", "10,20")
	require.NoError(t, err)
	require.Contains(t, progress, "bench search: skipped pbt on go-mlp: objective does not support Create.From")
	for _, row := range []string{`pbt-toy\s+-0\.878189\s+pbt\s+-0\.[0-9]+ \[`, `pbt-toy\s+-0\.878189\s+asha-promotion\s+`,
		`go-mlp\s+0\.0168562\s+hyperband-promotion\s+[0-9.]+ \[`} {
		require.Regexp(t, row, out)
	}
	require.NotRegexp(t, `go-mlp\s+\S+\s+pbt`, out)
}

func TestBenchSearchBadFlags(t *testing.T) {
	for want, args := range map[string][]string{
		`--algorithms: "hyperopt" is not one of`: {"--algorithms", "random,hyperopt"},
		`--objectives: objective "sphere"`:       {"--objectives", "sphere"},
		`--workers: 0 must be at least 1`:        {"--workers", "0"},
		`--plot: plot format "gif"`:              {"--trials", "2", "--seeds", "1", "--objectives", "branin", "--algorithms", "random", "--plot", t.TempDir(), "--plot-format", "gif"},
	} {
		_, _, err := runCLI(t, append([]string{"bench", "search"}, args...)...)
		require.ErrorContains(t, err, want)
	}
}
