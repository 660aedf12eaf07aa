package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestBenchAllocatorJSON(t *testing.T) {
	out, progress, err := runCLI(t, "bench", "allocator", "--trials", "4,12", "--nodes", "16",
		"--formulation", "compact,paper,greedy,equal", "--instances", "3", "--json")
	require.NoError(t, err)
	require.Contains(t, progress, "bench: 12 trials × 16 nodes, 3 instances")

	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Len(t, rows, 8)
	for _, key := range []string{"trials", "nodes", "formulation", "solve_ms_p50", "solve_ms_p95", "objective", "status"} {
		require.Contains(t, rows[0], key)
	}
	best := map[float64]float64{}
	for _, r := range rows {
		n := r["trials"].(float64)
		if r["formulation"] == "compact" {
			best[n] = r["objective"].(float64)
			require.Equal(t, "optimal", r["status"])
			require.Zero(t, r["gap_to_best"])
		}
	}
	for _, r := range rows {
		n := r["trials"].(float64)
		require.LessOrEqual(t, r["objective"].(float64), best[n]*(1+1e-9), "%v beats compact", r)
		if r["formulation"] == "paper" {
			require.InEpsilon(t, best[n], r["objective"].(float64), 1e-6, "paper and compact agree")
		}
	}
}

func TestBenchAllocatorTableAndSkip(t *testing.T) {
	out, _, err := runCLI(t, "bench", "allocator", "--trials", "10", "--nodes", "40",
		"--formulation", "compact,paper", "--instances", "1", "--paper-max-binaries", "100")
	require.NoError(t, err)
	require.Contains(t, out, "p50 ms")
	require.Regexp(t, `10\s+40\s+[0-9.]+\s+paper\s+-\s+-\s+-\s+-\s+skipped`, out)
}

func TestBenchAllocatorBadFlags(t *testing.T) {
	emptyScaling := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(emptyScaling, "scaling"), 0o755))
	cases := map[string][]string{
		`--trials: "x" is not a positive integer`:                          {"--trials", "10,x"},
		`--nodes: "0" is not a positive integer`:                           {"--nodes", "0"},
		`--formulation: "cbc" is not one of compact, paper, greedy, equal`: {"--formulation", "compact,cbc"},
		`--instances: 0 must be at least 1`:                                {"--instances", "0"},
		`--data: stat `:                                                    {"--data", t.TempDir()},
		`--data: no *.csv scaling files in`:                                {"--data", emptyScaling},
		`--data: embedded:nope/scaling: not in`:                            {"--data", "embedded:nope"},
		`--time-limit: -1s must be positive`:                               {"--time-limit", "-1s"},
	}
	for want, args := range cases {
		_, stderr, err := runCLI(t, append([]string{"bench", "allocator"}, args...)...)
		require.ErrorContains(t, err, want)
		require.Contains(t, stderr, "gleaner: ")
	}
}
