package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/slurmdemo"
)

// The default --swf is the built-in Theta log, so an installed binary needs
// no data beside it; its default window plans the 220 jobs the defaults
// promise on the default 6 nodes.
func TestSlurmDemoDefaultTraceIsBuiltIn(t *testing.T) {
	cmd := newSlurmDemoCmd()
	swf := cmd.Flags().Lookup("swf").DefValue
	require.Equal(t, data.Prefix+data.Theta2022, swf)

	f, err := data.Open(swf)
	require.NoError(t, err)
	defer f.Close()
	log, err := slurmdemo.ReadSWF(f)
	require.NoError(t, err)
	plan, err := slurmdemo.NewPlan(log, slurmdemo.PlanSettings{
		Offset: slurmDemoOffset, Jobs: slurmDemoJobs, ClusterNodes: 6, Compression: slurmDemoCompression,
	})
	require.NoError(t, err)
	require.Len(t, plan.Jobs, slurmDemoJobs)
}

// `gleaner sim` reads built-in traces, workloads and Gavel's table by their
// embedded: names, and --data defaults to the built-in reference data.
func TestSimReadsBuiltInData(t *testing.T) {
	r := runSimJSON(t, "--events", data.Prefix+data.SummitIdle, "--nodes", "32",
		"--jobs", data.Prefix+data.HPO10, "--policy", "equal", "--json")
	require.Equal(t, data.Prefix+data.SummitIdle, r.Trace["file"])
	require.EqualValues(t, 32, r.Trace["nodes"])
	checkSimPolicies(t, r, 10, "equal")

	r = runSimJSON(t, "--swf", data.Prefix+data.Theta2022, "--max-nodes", "128", "--window", "1656547680,1657152480",
		"--synthetic", "3", "--policy", "equal", "--json")
	require.Equal(t, "synthetic", r.Workload["source"])
	checkSimPolicies(t, r, 3, "equal")

	r = runSimJSON(t, "--events", data.Prefix+data.SummitIdle, "--nodes", "16", "--synthetic", "2",
		"--node-types", "k80=1,v100=1", "--objective", "efficiency", "--curves", "jpa",
		"--gpu-ratios", data.Prefix+data.Gavel, "--policy", "equal", "--json")
	checkSimPolicies(t, r, 2, "equal")

	_, _, err := runCLI(t, "sim", "--events", data.Prefix+"traces/nope.csv", "--jobs", data.Prefix+data.HPO10)
	require.ErrorContains(t, err, "--events: "+data.Prefix+"traces/nope.csv")
}
