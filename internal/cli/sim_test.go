package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	simEvents = "../../sim/testdata/tiny-idle.csv"
	simSWF    = "../../sim/testdata/tiny.swf"
	simJobs   = "../../sim/testdata/workloads/tiny.csv"
	// jpa/testdata holds scaling/ with a few real curves.
	simData = "../../jpa/testdata"
)

type simJSON struct {
	Trace    map[string]any   `json:"trace"`
	Workload map[string]any   `json:"workload"`
	Policies []map[string]any `json:"policies"`
}

func runSimJSON(t *testing.T, args ...string) simJSON {
	t.Helper()
	out, progress, err := runCLI(t, append([]string{"sim"}, args...)...)
	require.NoError(t, err, progress)
	var r simJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

func checkSimPolicies(t *testing.T, r simJSON, jobs int, policies ...string) {
	t.Helper()
	require.Len(t, r.Policies, len(policies))
	for i, p := range r.Policies {
		require.Equal(t, policies[i], p["policy"])
		for _, key := range []string{"policy", "throughput", "efficiency_vs_dedicated", "hole_utilisation",
			"rescales", "preemptions", "solver_ms_p50", "solver_ms_p99", "jobs_completed"} {
			require.Contains(t, p, key, "policy %s", policies[i])
		}
		hu := p["hole_utilisation"].(float64)
		require.GreaterOrEqual(t, hu, 0.0)
		require.LessOrEqual(t, hu, 1.0+1e-9)
		require.GreaterOrEqual(t, p["throughput"].(float64), 0.0)
		eff := p["efficiency_vs_dedicated"].(float64)
		require.GreaterOrEqual(t, eff, 0.0)
		require.LessOrEqual(t, eff, 1.0+1e-9)
		require.GreaterOrEqual(t, p["rescales"].(float64), 0.0)
		require.GreaterOrEqual(t, p["preemptions"].(float64), 0.0)
		require.LessOrEqual(t, p["solver_ms_p50"].(float64), p["solver_ms_p99"].(float64))
		done := p["jobs_completed"].(float64)
		require.GreaterOrEqual(t, done, 0.0)
		require.LessOrEqual(t, done, float64(jobs))
	}
}

func TestSimEventsJobsJSON(t *testing.T) {
	r := runSimJSON(t, "--events", simEvents, "--jobs", simJobs, "--policy", "compact,paper,greedy,equal", "--json")
	require.Equal(t, "events", r.Trace["format"])
	require.EqualValues(t, 6, r.Trace["nodes"]) // "# 6 nodes"
	require.EqualValues(t, 5, r.Trace["events"])
	require.EqualValues(t, 100, r.Trace["start"])
	require.EqualValues(t, 300, r.Trace["end"])
	require.Contains(t, r.Trace, "clipped_jobs")
	require.EqualValues(t, 2, r.Workload["jobs"])
	checkSimPolicies(t, r, 2, "compact", "paper", "greedy", "equal")
	for _, p := range r.Policies {
		// Nodes are idle over the whole window and J1 alone can use 4.
		require.Greater(t, p["throughput"].(float64), 0.0, p["policy"])
		require.Greater(t, p["hole_utilisation"].(float64), 0.0, p["policy"])
	}
}

func TestSimSWFSyntheticJSON(t *testing.T) {
	args := []string{"--swf", simSWF, "--synthetic", "5", "--seed", "3", "--data", simData, "--policy", "compact, equal", "--tfwd", "60", "--json"}
	r := runSimJSON(t, args...)
	require.Equal(t, "swf", r.Trace["format"])
	require.EqualValues(t, 4, r.Trace["nodes"]) // "; MaxNodes: 4"
	require.Greater(t, r.Trace["events"].(float64), 0.0)
	require.Contains(t, r.Trace, "clipped_jobs")
	require.Contains(t, r.Trace, "clipped_node_s")
	require.Equal(t, "synthetic", r.Workload["source"])
	require.EqualValues(t, 5, r.Workload["jobs"])
	checkSimPolicies(t, r, 5, "compact", "equal")

	require.Equal(t, "start", r.Workload["arrivals"])
	holes := r.Trace["holes"].(map[string]any)
	require.Greater(t, holes["holes"].(float64), 0.0)
	require.Len(t, holes["node_s_share_by_length"], 5)

	// The same seed draws the same workload: the same simulated metrics.
	again := runSimJSON(t, args...)
	for i := range r.Policies {
		for _, key := range []string{"throughput", "hole_utilisation", "rescales", "jobs_completed"} {
			require.Equal(t, r.Policies[i][key], again.Policies[i][key], key)
		}
	}

	// Bigger, stretched jobs arriving over the trace: the workload says so.
	spread := runSimJSON(t, "--swf", simSWF, "--synthetic", "5", "--data", simData, "--policy", "compact", "--json",
		"--synthetic-arrivals", "uniform", "--synthetic-node-hours", "3", "--synthetic-stretch", "2")
	require.Equal(t, "uniform", spread.Workload["arrivals"])
	require.EqualValues(t, 3, spread.Workload["node_hours"])
	require.EqualValues(t, 2, spread.Workload["stretch"])
	checkSimPolicies(t, spread, 5, "compact")
}

func TestSimWindowMinHoleMaxNodes(t *testing.T) {
	r := runSimJSON(t, "--swf", simSWF, "--jobs", simJobs, "--window", "1000,1200", "--min-hole", "1", "--max-nodes", "6", "--policy", "greedy", "--json")
	require.EqualValues(t, 6, r.Trace["nodes"])
	require.EqualValues(t, 1000, r.Trace["start"])
	require.EqualValues(t, 1200, r.Trace["end"])
	checkSimPolicies(t, r, 2, "greedy")
}

func TestSimTable(t *testing.T) {
	out, progress, err := runCLI(t, "sim", "--events", simEvents, "--jobs", simJobs)
	require.NoError(t, err)
	for _, s := range []string{"trace", "6 nodes", "5 events", "workload", "2 jobs",
		"throughput", "efficiency_vs_dedicated", "hole_utilisation", "rescales", "preemptions",
		"solver_ms_p50", "solver_ms_p99", "jobs_completed", "compact", "greedy", "equal"} {
		require.Contains(t, out, s)
	}
	require.NotContains(t, out, "paper") // not in the default --policy
	require.Contains(t, progress, "sim: [1/3] compact: replaying")
	require.Contains(t, progress, "sim: [3/3] equal: done in")
}

func TestSimBadFlags(t *testing.T) {
	base := []string{"--events", simEvents, "--jobs", simJobs}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no source", []string{"--jobs", simJobs}, "--events, --swf"},
		{"two sources", []string{"--events", simEvents, "--swf", simSWF, "--jobs", simJobs}, "--events, --swf"},
		{"no workload", []string{"--events", simEvents}, "--jobs, --synthetic"},
		{"two workloads", []string{"--events", simEvents, "--jobs", simJobs, "--synthetic", "3"}, "--jobs, --synthetic"},
		{"synthetic zero", []string{"--events", simEvents, "--synthetic", "0"}, "--synthetic"},
		{"synthetic not a number", []string{"--events", simEvents, "--synthetic", "x"}, "synthetic"},
		{"bad policy", append(base, "--policy", "compact,best"), `--policy: "best" is not one of compact, paper, greedy, equal`},
		{"repeated policy", append(base, "--policy", "equal,equal"), `--policy: "equal" is given twice`},
		{"bad window", append(base, "--window", "x,y"), `--window: "x,y" is not FROM,TO in seconds`},
		{"one-sided window", append(base, "--window", "100"), "--window"},
		{"reversed window", append(base, "--window", "300,100"), "--window"},
		{"negative tfwd", append(base, "--tfwd", "-1"), "--tfwd"},
		{"bad tfwd", append(base, "--tfwd", "soon"), `--tfwd: "soon" is not auto, a number of seconds or a duration`},
		{"bad idle estimate", append(base, "--idle-estimate", "psychic"), `--idle-estimate: "psychic" is not one of none, true, noisy:SIGMA`},
		{"noisy without sigma", append(base, "--idle-estimate", "noisy"), `--idle-estimate: "noisy": want noisy:SIGMA`},
		{"negative sigma", append(base, "--idle-estimate", "noisy:-1"), "--idle-estimate"},
		{"sigma on true", append(base, "--idle-estimate", "true:0.5"), `--idle-estimate: "true:0.5": only noisy takes a sigma`},
		{"negative min-hole", append(base, "--min-hole", "-5"), "--min-hole"},
		{"negative max-nodes", append(base, "--max-nodes", "-1"), "--max-nodes"},
		{"missing events file", []string{"--events", "no-such.csv", "--jobs", simJobs}, "--events"},
		{"malformed jobs file", []string{"--events", simEvents, "--jobs", simEvents}, "--jobs"},
		{"unknown flag", append(base, "--frobnicate"), "unknown flag"},
		{"bad curves", append(base, "--curves", "psychic"), `--curves: "psychic" is not one of oracle, jpa`},
		{"bad noise", append(base, "--curves", "jpa", "--noise", "2"), "--noise"},
		{"positional argument", append(base, "extra"), "unknown command"},
		{"bad arrivals", []string{"--events", simEvents, "--synthetic", "2", "--data", simData, "--synthetic-arrivals", "soon"}, `--synthetic-arrivals: "soon" is not one of start, uniform`},
		{"bad node-hours", []string{"--events", simEvents, "--synthetic", "2", "--data", simData, "--synthetic-node-hours", "0"}, "--synthetic-node-hours: 0 must be a positive number"},
		{"bad stretch", []string{"--events", simEvents, "--synthetic", "2", "--data", simData, "--synthetic-stretch", "0"}, "--synthetic-stretch: 0 must be at least 1"},
		{"synthetic flag without --synthetic", []string{"--events", simEvents, "--jobs", simJobs, "--synthetic-node-hours", "5"}, "--synthetic-node-hours: only with --synthetic"},
		{"missing data", []string{"--events", simEvents, "--synthetic", "2", "--data", "no-such-dir"}, "--data"},
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

// With --curves jpa the allocator learns the curves from noisy simulated
// measurements; the run is reproducible by seed and labelled as such.
func TestSimJPACurves(t *testing.T) {
	args := []string{"--events", simEvents, "--jobs", simJobs, "--policy", "compact,equal", "--curves", "jpa", "--seed", "3", "--json"}
	r := runSimJSON(t, args...)
	checkSimPolicies(t, r, 2, "compact", "equal")
	for _, p := range r.Policies {
		require.Equal(t, "jpa", p["curves"])
	}
	again := runSimJSON(t, args...)
	require.Equal(t, r.Policies[0]["throughput"], again.Policies[0]["throughput"], "same seed, same run")
	oracle := runSimJSON(t, "--events", simEvents, "--jobs", simJobs, "--policy", "compact", "--json")
	require.Equal(t, "oracle", oracle.Policies[0]["curves"])
}

// --curves oracle,jpa runs every policy with each; --plot writes the
// three figures, named on stderr.
func TestSimBothCurvesAndPlots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "figures")
	out, progress, err := runCLI(t, "sim", "--events", simEvents, "--jobs", simJobs, "--policy", "compact,equal",
		"--curves", "oracle,jpa", "--json", "--plot", dir, "--plot-format", "svg")
	require.NoError(t, err, progress)
	var r simJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	checkSimPolicies(t, r, 2, "compact", "equal", "compact", "equal")
	for i, want := range []string{"oracle", "oracle", "jpa", "jpa"} {
		require.Equal(t, want, r.Policies[i]["curves"])
		if want == "jpa" {
			st := r.Policies[i]["jpa"].(map[string]any)
			require.Greater(t, st["published"].(float64), 0.0, "the JPA measured something")
		} else {
			require.NotContains(t, r.Policies[i], "jpa")
		}
	}
	for _, name := range []string{"nodes.svg", "samples.svg", "solver.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Contains(t, string(b), "compact/jpa", "%s has a legend entry per run", name)
		require.Contains(t, progress, filepath.Join(dir, name))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--curves", "jpa,jpa"}, `--curves: "jpa" is given twice`},
		{[]string{"--plot", dir, "--plot-format", "gif"}, `--plot-format: "gif" is not one of png, svg`},
	} {
		_, _, err := runCLI(t, append([]string{"sim", "--events", simEvents, "--jobs", simJobs}, tc.args...)...)
		require.ErrorContains(t, err, tc.want)
		require.Equal(t, ExitUsage, ExitCode(err))
	}
}

// --per-job adds every job's metrics, in workload order, to each run.
func TestSimPerJob(t *testing.T) {
	out, progress, err := runCLI(t, "sim", "--events", simEvents, "--jobs", simJobs, "--policy", "compact", "--json", "--per-job")
	require.NoError(t, err, progress)
	var r struct {
		Policies []struct {
			Samples float64          `json:"samples"`
			PerJob  []map[string]any `json:"per_job"`
		} `json:"policies"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	require.Len(t, r.Policies, 1)
	jobs := r.Policies[0].PerJob
	require.Len(t, jobs, 2)
	var samples float64
	for _, j := range jobs {
		require.Contains(t, j, "name")
		require.Contains(t, j, "efficiency_vs_dedicated")
		samples += j["samples"].(float64)
	}
	require.InDelta(t, r.Policies[0].Samples, samples, 1e-6*samples, "the run's samples are its jobs'")

	plain := runSimJSON(t, "--events", simEvents, "--jobs", simJobs, "--policy", "compact", "--json")
	require.NotContains(t, plain.Policies[0], "per_job")
	_, _, err = runCLI(t, "sim", "--events", simEvents, "--jobs", simJobs, "--per-job")
	require.ErrorContains(t, err, "--per-job: only with --json")
}

func TestSimProgressLines(t *testing.T) {
	var buf strings.Builder
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	report := simProgress(&buf, "sim: [1/1] compact:", now)
	report(105, 100, 200) // 5%: nothing yet
	clock = clock.Add(6 * time.Second)
	report(130, 100, 200) // 30%, 6 s in: a line
	clock = clock.Add(time.Second)
	report(150, 100, 200) // 50% but only 1 s later: nothing
	clock = clock.Add(10 * time.Second)
	report(200, 100, 200) // done, 17 s in
	require.Equal(t, "sim: [1/1] compact:  30% of the trace replayed, 6s elapsed\n"+
		"sim: [1/1] compact: 100% of the trace replayed, 17s elapsed\n", buf.String())
}

// --idle-estimate and --tfwd: the run says what the allocator knew and
// the T_fwd it was given. In [100, 250) of the tiny trace the decisions
// come at 100 (a idle until 200, b until 150: T_fwd 50 s), 150 (a until
// 200, d until 300: 50 s) and 200 (d alone: 100 s). d's end lies beyond
// the window: only the events after it, read again, tell it; without
// estimates, every decision falls back to 300 s.
func TestSimIdleEstimates(t *testing.T) {
	base := []string{"--events", simEvents, "--jobs", simJobs, "--window", "100,250", "--policy", "compact", "--json"}
	auto := runSimJSON(t, append(base, "--idle-estimate", "true", "--tfwd", "auto")...)
	p := auto.Policies[0]
	require.Equal(t, "true", p["idle_estimate"])
	require.Equal(t, "auto", p["tfwd"])
	require.EqualValues(t, 3, p["decisions"])
	require.EqualValues(t, 50, p["lookahead_s_p50"])
	require.EqualValues(t, 100, p["lookahead_s_p90"], "the true end beyond the window")

	none := runSimJSON(t, append(base, "--tfwd", "auto")...).Policies[0]
	require.Equal(t, "none", none["idle_estimate"])
	require.EqualValues(t, 300, none["lookahead_s_p10"])
	require.EqualValues(t, 300, none["lookahead_s_p90"])

	fixed := runSimJSON(t, append(base, "--idle-estimate", "true", "--tfwd", "2m")...).Policies[0]
	require.Equal(t, "120", fixed["tfwd"])
	require.EqualValues(t, 120, fixed["lookahead_s_p50"])
	def := runSimJSON(t, base...).Policies[0]
	require.Equal(t, "300", def["tfwd"])

	noisy := append(base, "--idle-estimate", "noisy:1", "--tfwd", "auto", "--seed", "5")
	n1 := runSimJSON(t, noisy...).Policies[0]
	n2 := runSimJSON(t, noisy...).Policies[0]
	require.Equal(t, "noisy:1", n1["idle_estimate"])
	for _, key := range []string{"lookahead_s_p10", "lookahead_s_p50", "lookahead_s_p90", "throughput", "rescales"} {
		require.Equal(t, n1[key], n2[key], "same seed, same %s", key)
	}

	out, progress, err := runCLI(t, "sim", "--events", simEvents, "--jobs", simJobs, "--policy", "compact", "--idle-estimate", "noisy:0.5", "--tfwd", "auto")
	require.NoError(t, err, progress)
	for _, s := range []string{"idle_estimate", "tfwd_s_p50", "noisy:0.5", "auto"} {
		require.Contains(t, out, s)
	}
}

// A workload that arrives after the trace ends used to print efficiency
// 0.000 and exit 0: nothing could run. It is a usage error naming the
// file and both spans.
func TestSimWorkloadAfterTheTrace(t *testing.T) {
	late := filepath.Join(t.TempDir(), "late.csv")
	require.NoError(t, os.WriteFile(late, []byte("name,submit_unix,min_nodes,max_nodes,rescale_up_s,rescale_down_s,total_samples,nodes,samples_per_s\n"+
		"J0,5000,1,2,8,5,3000,0 1 2,0 10 20\nJ1,6000,1,2,8,5,3000,0 1 2,0 10 20\n"), 0o644))
	_, stderr, err := runCLI(t, "sim", "--events", simEvents, "--jobs", late)
	require.Error(t, err)
	require.Equal(t, ExitUsage, ExitCode(err), err.Error())
	want := "--jobs " + late + ": every job arrives at or after the trace's end (first at 5000, the trace spans [100, 300])"
	require.Contains(t, err.Error(), want)
	require.Contains(t, stderr, want)
}

// An SWF log with nothing to replay (every job skipped) used to say "the
// trace spans [0, 0]: nothing to replay (check --window)", naming no
// file: it names the file and why.
func TestSimNothingToReplayNamesTheFile(t *testing.T) {
	log := filepath.Join(t.TempDir(), "empty.swf")
	require.NoError(t, os.WriteFile(log, []byte("; MaxNodes: 4\n"+
		"1 0 0 -1 1 -1 -1 1 100 -1 1 -1 -1 -1 -1 -1 -1 -1\n2 10 0 -1 1 -1 -1 1 100 -1 1 -1 -1 -1 -1 -1 -1 -1\n"), 0o644))
	_, _, err := runCLI(t, "sim", "--swf", log, "--jobs", simJobs)
	require.Error(t, err)
	require.Equal(t, ExitUsage, ExitCode(err), err.Error())
	require.Contains(t, err.Error(), "--swf "+log+": the trace spans [0, 0]: nothing to replay (all 2 jobs skipped")
}
