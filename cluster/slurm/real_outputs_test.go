package slurm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

func readOutput(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "outputs", name))
	require.NoError(t, err)
	return b
}

// The outputs recorded from real Slurm 22.05 daemons (testdata/outputs)
// read as what they show, and give the estimates they imply.
func TestRecordedOutputs(t *testing.T) {
	pilots, err := ParseJobs(readOutput(t, "squeue-pilots.txt"), time.UTC)
	require.NoError(t, err)
	require.Len(t, pilots, 5)
	assert.Equal(t, Job{ID: "8", State: "PENDING", Start: time.Date(2026, 11, 23, 13, 22, 7, 0, time.UTC),
		End: time.Date(2026, 11, 23, 13, 32, 7, 0, time.UTC), Comment: "gleaner:pool=test", Partition: "glean"}, pilots[0])
	assert.Equal(t, []string{"g3"}, pilots[1].Nodes)

	plan, err := ParsePlan(readOutput(t, "squeue-start.txt"), time.UTC)
	require.NoError(t, err)
	require.Len(t, plan, 3)
	assert.Equal(t, []string{"g1", "g2", "g3", "g4", "g5"}, plan[1].Nodes)
	assert.Equal(t, int64(4294901756), plan[1].Priority)

	resv, err := ParseReservations(readOutput(t, "scontrol-reservation.txt"), time.UTC)
	require.NoError(t, err)
	require.Len(t, resv, 1)
	assert.Equal(t, []string{"g5", "g6"}, resv[0].Nodes)
	none, err := ParseReservations(readOutput(t, "scontrol-reservation-none.txt"), time.UTC)
	require.NoError(t, err)
	assert.Empty(t, none)

	parts, err := ParsePartitions(readOutput(t, "scontrol-partitions.txt"))
	require.NoError(t, err)
	require.Len(t, parts, 2)
	glean, err := ParsePartitions(readOutput(t, "scontrol-partition-glean.txt"))
	require.NoError(t, err)
	assert.Equal(t, "CANCEL", glean[0].PreemptMode)
	assert.Equal(t, 10*time.Second, glean[0].GraceTime)

	conf, err := ParseConfig(readOutput(t, "scontrol-config.txt"))
	require.NoError(t, err)
	assert.Equal(t, "22.05.8", conf.Version)
	assert.Equal(t, "preempt/partition_prio", conf.PreemptType)
	assert.Positive(t, conf.KillWait)
	assert.Equal(t, 2*time.Second, conf.BackfillInterval)

	addrs, err := ParseNodeAddrs(readOutput(t, "sinfo-nodeaddr.txt"))
	require.NoError(t, err)
	assert.Len(t, addrs, 4)
	assert.True(t, nodesHere(addrs), "the one-machine cluster's nodes are this machine")

	id, err := ParseJobID(readOutput(t, "sbatch-parsable.txt"))
	require.NoError(t, err)
	assert.Equal(t, "2", id)

	// The pilot on g3 (ends 13:30:01) keeps its node until then: batch job
	// 4 is planned on g[1-5] only at 13:50. The pilot on g6 ends first too.
	now := time.Date(2026, 11, 23, 13, 21, 0, 0, time.UTC)
	e := IdleUntil("g3", now, pilots[1].End, "glean", plan, resv)
	assert.Equal(t, pilot.Estimate{Until: pilots[1].End, Why: "pilot end"}, e)
	// Without its own end, g5's is batch job 4's planned start, before the
	// maintenance reservation.
	e = IdleUntil("g5", now, time.Time{}, "glean", plan, resv)
	assert.Equal(t, "job 4 (batch)", e.Why)
	e = IdleUntil("g6", now, time.Time{}, "glean", plan, resv)
	assert.Equal(t, "job 5 (batch)", e.Why)
}
