package slurm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string][]string{
		"":                   nil,
		"(null)":             nil,
		"g1":                 {"g1"},
		"g[1-3]":             {"g1", "g2", "g3"},
		"g[1-2,5],h7":        {"g1", "g2", "g5", "h7"},
		"n[08-10]":           {"n08", "n09", "n10"},
		"r[1-2]-n[1-2]":      {"r1-n1", "r1-n2", "r2-n1", "r2-n2"},
		"node-a,node-b":      {"node-a", "node-b"},
		"gpu[3]":             {"gpu3"},
		"x[001-003]y":        {"x001y", "x002y", "x003y"},
		"nid[001000-001001]": {"nid001000", "nid001001"},
	} {
		got, err := ExpandHostlist(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"g[1-", "g]1", "g[3-1]", "g[a-b]", "g[1-2", "a,,b", "g[]", "g[1-100000000]", "g[-1]", "g[+1]"} {
		_, err := ExpandHostlist(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"UNLIMITED":  0,
		"30":         30 * time.Minute,
		"05:30":      5*time.Minute + 30*time.Second,
		"01:00:00":   time.Hour,
		"1-00:00:00": 24 * time.Hour,
		"2-03":       51 * time.Hour,
		"1-02:03":    26*time.Hour + 3*time.Minute,
	} {
		got, err := ParseDuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "x", "1:2:3:4", "-5", "1-", "+3", "1-2:3:4:5"} {
		_, err := ParseDuration(bad)
		assert.Error(t, err, bad)
	}
	// FormatDuration rounds up to whole seconds; ParseDuration reads it back.
	for d, want := range map[time.Duration]time.Duration{
		time.Second: time.Second, 90 * time.Minute: 90 * time.Minute, 50 * time.Hour: 50 * time.Hour, 1500 * time.Millisecond: 2 * time.Second,
	} {
		back, err := ParseDuration(FormatDuration(d))
		require.NoError(t, err)
		assert.Equal(t, want, back, d.String())
	}
}

func TestParseJobsNamesCommandAndField(t *testing.T) {
	jobs, err := ParseJobs([]byte("12|RUNNING|g3|2026-11-23T12:00:00|2026-11-23T14:00:00|gleaner:pool=p|glean\n13|PENDING||N/A|N/A|gleaner:pool=p|glean\n"), time.UTC)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	assert.Equal(t, []string{"g3"}, jobs[0].Nodes)
	assert.Equal(t, time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC), jobs[0].End)
	assert.True(t, jobs[1].Start.IsZero())

	_, err = ParseJobs([]byte("12|RUNNING|g3|yesterday|N/A|c|glean\n"), time.UTC)
	var pe *ParseError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, 1, pe.Line)
	assert.Contains(t, err.Error(), "squeue")
	assert.Contains(t, err.Error(), "start (%S)")

	_, err = ParseJobs([]byte("12|RUNNING\n"), time.UTC)
	assert.ErrorContains(t, err, "want 7 fields")
}

func TestParsePlan(t *testing.T) {
	plan, err := ParsePlan([]byte("40|batch|10000|2026-11-23T12:30:00|g[1-2]|2|big\n41|batch|900|N/A|(null)|1|small\n"), time.UTC)
	require.NoError(t, err)
	assert.Equal(t, []string{"g1", "g2"}, plan[0].Nodes)
	assert.Equal(t, int64(10000), plan[0].Priority)
	assert.Empty(t, plan[1].Nodes)
	_, err = ParsePlan([]byte("40|batch|high|N/A|(null)|1|x\n"), time.UTC)
	assert.ErrorContains(t, err, "priority (%Q)")
}

func TestParsePartitionsConfigReservations(t *testing.T) {
	parts, err := ParsePartitions([]byte("PartitionName=glean AllowGroups=ALL Nodes=g[1-4] PriorityTier=1 MaxTime=UNLIMITED PreemptMode=CANCEL State=UP GraceTime=10\n"))
	require.NoError(t, err)
	assert.Equal(t, Partition{Name: "glean", GraceTime: 10 * time.Second, PreemptMode: "CANCEL", PriorityTier: 1, Nodes: []string{"g1", "g2", "g3", "g4"}, State: "UP"}, parts[0])
	_, err = ParsePartitions([]byte("PartitionName=glean GraceTime=soon\n"))
	assert.ErrorContains(t, err, "GraceTime")

	conf, err := ParseConfig([]byte("Configuration data as of 2026-11-23T12:00:00\nKillWait                = 5 sec\nSchedulerParameters     = bf_continue,bf_interval=2\nPreemptType             = preempt/partition_prio\nSlurmctldParameters     = preempt_send_user_signal\nSLURM_VERSION           = 22.05.8\n"))
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, conf.KillWait)
	assert.Equal(t, 2*time.Second, conf.BackfillInterval)
	assert.True(t, conf.SendsUserSignal())
	_, err = ParseConfig([]byte("KillWait = 5 sec\n"))
	assert.ErrorContains(t, err, "SLURM_VERSION")

	rs, err := ParseReservations([]byte("ReservationName=maint StartTime=2026-11-23T13:00:00 EndTime=2026-11-23T14:00:00 Duration=01:00:00 Nodes=g[3-4] State=INACTIVE\n"), time.UTC)
	require.NoError(t, err)
	assert.Equal(t, []string{"g3", "g4"}, rs[0].Nodes)
	rs, err = ParseReservations([]byte("No reservations in the system\n"), time.UTC)
	require.NoError(t, err)
	assert.Empty(t, rs)

	id, err := ParseJobID([]byte("1234;cluster\n"))
	require.NoError(t, err)
	assert.Equal(t, "1234", id)
	_, err = ParseJobID([]byte("sbatch: error: Batch job submission failed"))
	assert.ErrorContains(t, err, "sbatch --parsable")
}

func TestIdleUntilTakesTheEarliestBatchClaim(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return now.Add(time.Duration(m) * time.Minute) }
	plan := []PlannedJob{
		{ID: "7", Partition: "glean", Start: at(1), Nodes: []string{"g1"}},  // a pilot: not batch work
		{ID: "8", Partition: "batch", Start: at(20), Nodes: []string{"g1"}}, // claims g1 at +20
		{ID: "9", Partition: "batch", Start: at(5), Nodes: []string{"g2"}},
		{ID: "10", Partition: "batch", Start: at(-1), Nodes: []string{"g3"}}, // overdue
	}
	resv := []Reservation{{Name: "maint", Start: at(10), Nodes: []string{"g1"}}}
	assert.Equal(t, pilot.Estimate{Until: at(10), Why: "reservation maint", Claimed: true}, IdleUntil("g1", now, at(60), "glean", plan, resv))
	assert.Equal(t, "job 9 (batch)", IdleUntil("g2", now, at(60), "glean", plan, resv).Why)
	assert.Equal(t, "job 10 (batch)", IdleUntil("g3", now, at(60), "glean", plan, resv).Why)
	assert.Equal(t, pilot.Estimate{Until: at(60), Why: "pilot end"}, IdleUntil("g4", now, at(60), "glean", plan, resv))
	assert.Equal(t, pilot.Estimate{}, IdleUntil("g4", now, time.Time{}, "glean", plan, resv))
}

func TestParseErrorMessage(t *testing.T) {
	e := &ParseError{Command: "squeue", Line: 3, Field: "end (%e)", Value: strings.Repeat("x", 100), Reason: "bad"}
	assert.Contains(t, e.Error(), "squeue: line 3: field end (%e)")
	assert.Contains(t, e.Error(), "…")
}
