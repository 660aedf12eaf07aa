package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBenchSearchMultiTableAndJSON(t *testing.T) {
	out, progress, err := runCLI(t, "bench", "search-multi", "--algorithms", "random", "--problems", "dtlz2,tnk",
		"--trials", "30", "--seeds", "2", "--at", "10,30")
	require.NoError(t, err)
	require.Contains(t, progress, "bench search-multi: random on tnk, 2 seeds")
	require.Contains(t, out, "hypervolume after N trials: median [q1, q3] over 2 seeds; 8 workers, cost σ 0.3, 30 trials per run")
	require.Regexp(t, `dtlz2\s+0\.807401\s+random\s+0\.[0-9]+ \[[0-9.e-]+, [0-9.e-]+\]\s+0\.[0-9]+ \[`, out)
	require.Regexp(t, `tnk\s+0\.655059\s+random\s+`, out)
	require.NotContains(t, out, "P(win)")

	out, _, err = runCLI(t, "bench", "search-multi", "--algorithms", "random", "--problems", "zdt1", "--trials", "5",
		"--seeds", "1", "--at", "5", "--json")
	require.NoError(t, err)
	var rep struct {
		Curves []struct {
			Method string `json:"method"`
			HV     []struct{ Median float64 }
		} `json:"curves"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Curves, 1)
	require.Len(t, rep.Curves[0].HV, 5)
}

// --optuna sets another implementation's runs beside Gleaner's, with the
// win probability against its best sampler at each trial count.
func TestBenchSearchMultiVersusOptuna(t *testing.T) {
	file := filepath.Join(t.TempDir(), "optuna.json")
	res := func(f1, f2 float64) map[string]any { return map[string]any{"values": []float64{f1, f2}} }
	doc := map[string]any{"trials": 2, "workers": 8, "seed": 1, "seeds": 2, "sigma": 0.3, "runs": []map[string]any{
		{"problem": "zdt1", "method": "optuna-good", "seed": 1, "results": []any{res(0, 0), res(0, 0)}},
		{"problem": "zdt1", "method": "optuna-good", "seed": 2, "results": []any{res(0, 0), res(0, 0)}},
		{"problem": "zdt1", "method": "optuna-bad", "seed": 1, "results": []any{res(2, 2), res(2, 2)}},
		{"problem": "zdt1", "method": "optuna-bad", "seed": 2, "results": []any{res(2, 2), res(2, 2)}},
	}}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, b, 0o644))
	out, _, err := runCLI(t, "bench", "search-multi", "--algorithms", "random", "--problems", "zdt1", "--trials", "2",
		"--seeds", "2", "--at", "2", "--optuna", file)
	require.NoError(t, err)
	require.Contains(t, out, "P(win) N=2")
	// (0, 0) fills the whole box, 1.21: random cannot beat it
	require.Regexp(t, `zdt1\s+0\.876667\s+random\s+\S+ \[\S+, \S+\]\s+0\.00\n`, out)
	require.Regexp(t, `zdt1\s+0\.876667\s+optuna-good\s+1\.21 \[1\.21, 1\.21\]\s+best\n`, out)
	require.Regexp(t, `zdt1\s+0\.876667\s+optuna-bad\s+0 \[0, 0\]\s+-\n`, out)

	_, _, err = runCLI(t, "bench", "search-multi", "--algorithms", "random", "--problems", "zdt1", "--trials", "2",
		"--seeds", "3", "--at", "2", "--optuna", file)
	require.ErrorContains(t, err, "ran with seeds 1 to 2, these runs 1 to 3: run both alike")
}

func TestBenchSearchMultiBadFlags(t *testing.T) {
	for want, args := range map[string][]string{
		`--algorithms: "tpe" does not take several objectives; these do:`: {"--algorithms", "random,tpe"},
		`--problems: problem "sphere" is not one of zdt1, dtlz2, tnk`:     {"--problems", "sphere"},
		`--workers: 0 must be at least 1`:                                 {"--workers", "0"},
		`--at: 200 is not a trial count in [1, --trials 100]`:             {"--at", "50,200"},
		`--optuna: open`: {"--algorithms", "random", "--optuna", "/nonexistent.json"},
	} {
		_, _, err := runCLI(t, append([]string{"bench", "search-multi"}, args...)...)
		require.ErrorContains(t, err, want)
	}
}

// Without --algorithms every algorithm of several objectives that only
// creates trials runs (asha, which needs learning curves, is left out).
func TestBenchSearchMultiDefaultAlgorithms(t *testing.T) {
	out, _, err := runCLI(t, "bench", "search-multi", "--problems", "tnk", "--trials", "12", "--seeds", "1", "--at", "12")
	require.NoError(t, err)
	for _, a := range []string{"nsga2", "motpe", "random", "quasirandom"} {
		require.Regexp(t, `tnk\s+0\.655059\s+`+a+`\s`, out)
	}
	require.NotContains(t, out, "asha")
}
