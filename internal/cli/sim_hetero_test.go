package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/data"
)

// simGavelData is a --data directory holding a small table in Gavel's
// format: two job types on two GPU types, one 5× faster on b.
func simGavelData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "gpus"), 0o755))
	table := "job_type,scale_factor,a,b\n" +
		"fast on b,1,1,5\nfast on b,2,2,9\n" +
		"flat,1,4,4.4\nflat,2,7,8\n"
	require.NoError(t, os.WriteFile(dataPath(dir, data.Gavel), []byte(table), 0o644))
	return dir
}

// A mixed pool: each policy runs type-aware (oracle) and type-blind, the
// report says which, with the objective, the work rate and where the
// node-time went; the same seed gives the same numbers.
func TestSimMixedPool(t *testing.T) {
	args := []string{"--swf", simSWF, "--synthetic", "6", "--seed", "2", "--data", simGavelData(t), "--node-types", "a=1,b=1",
		"--objective", "efficiency", "--curves", "oracle,blind", "--policy", "compact,greedy", "--json"}
	r := runSimJSON(t, args...)
	require.Equal(t, "a=1,b=1", r.Workload["node_types"])
	require.EqualValues(t, 6, r.Workload["jobs"])
	checkSimPolicies(t, r, 6, "compact", "greedy", "compact", "greedy")
	for i, p := range r.Policies {
		require.Equal(t, []string{"oracle", "blind"}[i/2], p["curves"])
		require.Equal(t, "efficiency", p["objective"])
		require.Contains(t, p, "work_rate")
		require.Contains(t, p, "makespan_s")
		for typ := range p["allocated_node_s_by_type"].(map[string]any) {
			require.Contains(t, []string{"a", "b"}, typ)
		}
	}
	again := runSimJSON(t, args...)
	for i := range r.Policies {
		for _, key := range []string{"work_rate", "throughput", "rescales", "makespan_s"} {
			require.Equal(t, r.Policies[i][key], again.Policies[i][key], key)
		}
	}

	out, _, err := runCLI(t, append([]string{"sim"}, args[:len(args)-1]...)...)
	require.NoError(t, err)
	for _, s := range []string{"node types a=1,b=1", "objective", "work_rate", "makespan_h", "node_s_by_type", "blind"} {
		require.Contains(t, out, s)
	}
}

// The JPA learns a mixed pool's curves per type, with the GPU ratios
// (--gpu-ratios) to predict a job on a type it has not run on.
func TestSimMixedPoolJPA(t *testing.T) {
	dir := simGavelData(t)
	r := runSimJSON(t, "--swf", simSWF, "--synthetic", "6", "--seed", "2", "--data", dir, "--node-types", "a=1,b=1",
		"--objective", "efficiency", "--curves", "oracle,jpa", "--policy", "compact", "--gpu-ratios", dataPath(dir, data.Gavel), "--json")
	checkSimPolicies(t, r, 6, "compact", "compact")
	require.Equal(t, "jpa", r.Policies[1]["curves"])
	require.Positive(t, r.Policies[1]["work_rate"])
}

// Without --node-types the report has no mixed-pool keys or columns.
func TestSimOneTypeReportUnchanged(t *testing.T) {
	r := runSimJSON(t, "--events", simEvents, "--jobs", simJobs, "--policy", "compact", "--json")
	require.NotContains(t, r.Workload, "node_types")
	require.NotContains(t, r.Policies[0], "allocated_node_s_by_type")
	require.Equal(t, "efficiency", r.Policies[0]["objective"], "production's objective is the default")
	r = runSimJSON(t, "--events", simEvents, "--jobs", simJobs, "--policy", "compact", "--objective", "throughput", "--json")
	require.Equal(t, "throughput", r.Policies[0]["objective"], "BFTrainer's, when asked for")
	out, _, err := runCLI(t, "sim", "--events", simEvents, "--jobs", simJobs, "--policy", "compact")
	require.NoError(t, err)
	require.NotContains(t, out, "work_rate")
}

func TestSimMixedPoolBadFlags(t *testing.T) {
	syn := []string{"--events", simEvents, "--synthetic", "2", "--data", simGavelData(t)}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"blind on one type", append(syn, "--curves", "oracle,blind"), "--curves: blind only with --node-types"},
		{"node types with a job file", []string{"--events", simEvents, "--jobs", simJobs, "--node-types", "a=1"}, "--node-types: only with --synthetic"},
		{"ratios without the jpa", append(syn, "--node-types", "a=1,b=1", "--gpu-ratios", "x.csv"), "--gpu-ratios: only with --curves jpa"},
		{"ratios unreadable", append(syn, "--node-types", "a=1,b=1", "--curves", "jpa", "--gpu-ratios", "no-such.csv"), "--gpu-ratios: open no-such.csv"},
		{"bad mix", append(syn, "--node-types", "a"), `--node-types: "a" is not TYPE=WEIGHT`},
		{"type not in the table", append(syn, "--node-types", "a=1,v100=1"), "--node-types: no job type of"},
		{"bad objective", append(syn, "--objective", "joy"), `--objective: "joy" is not one of throughput, efficiency`},
		{"no gpu table", []string{"--events", simEvents, "--synthetic", "2", "--data", t.TempDir(), "--node-types", "a=1"}, "--data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, err := runCLI(t, append([]string{"sim"}, c.args...)...)
			require.Error(t, err)
			require.Equal(t, ExitUsage, ExitCode(err), err.Error())
			require.Contains(t, err.Error(), c.want)
			require.Contains(t, stderr, c.want)
		})
	}
}
