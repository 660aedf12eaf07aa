package pbs

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJobEnding(t *testing.T) {
	for _, tc := range []struct {
		state    string
		substate int
		ending   bool
	}{
		{"R", SubstateRunning, false},
		{"R", SubstatePrerun, false},
		{"R", 0, false}, // substate not listed
		{"R", SubstateRerun, true},
		{"R", SubstateRerun3, true},
		{"R", SubstateExiting, true},
		{"R", SubstateTerm, true},
		{"E", 51, true},
		{"Q", 10, true},
		{"F", 92, true},
		{"S", 43, false},
	} {
		got := Job{State: tc.state, Substate: tc.substate}.Ending()
		assert.Equal(t, tc.ending, got != "", "state %s substate %d: %q", tc.state, tc.substate, got)
	}
}

// The substate as qstat prints it: the running pilot 42, the pilot a
// preemption requeued 10, a finished job 91.
func TestParseJobsSubstate(t *testing.T) {
	for name, want := range map[string]map[string]int{
		"qstat_json_running_pilot.stdout":        {"68.gleaner-pbs": SubstateRunning},
		"preempt_high-requeue_after_json.stdout": {"81.gleaner-pbs": 10},
		"qstat_json_finished.stdout":             {"67.gleaner-pbs": 91},
	} {
		b := transcript(t, name)
		require.NotNil(t, b, name)
		jobs, err := ParseJobs(b, time.UTC)
		require.NoError(t, err, name)
		got := map[string]int{}
		for _, j := range jobs {
			if _, ok := want[j.ID]; ok {
				got[j.ID] = j.Substate
			}
		}
		assert.Equal(t, want, got, name)
	}
}

// pilotQstat answers `qstat -f -F json 68.gleaner-pbs` with the recorded
// running pilot, its substate the next of substates (the last repeats).
type pilotQstat struct {
	t         *testing.T
	mu        sync.Mutex
	substates []int
	calls     int
	fail      bool
}

func (q *pilotQstat) Run(_ context.Context, _ []string, name string, args ...string) ([]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	require.Equal(q.t, "qstat -f -F json 68.gleaner-pbs", strings.Join(append([]string{name}, args...), " "))
	q.calls++
	if q.fail {
		return nil, errors.New("qstat: cannot connect to server")
	}
	s := q.substates[min(q.calls, len(q.substates))-1]
	out := strings.Replace(string(transcript(q.t, "qstat_json_running_pilot.stdout")), `"substate":42`, `"substate":`+strconv.Itoa(s), 1)
	return []byte(out), nil
}

func (q *pilotQstat) n() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.calls
}

// The lost SIGTERM: PBS requeued the pilot as it started (substate 60
// from the requeue on) and will SIGKILL it at kill_delay. The first look,
// before WatchPilot returns, says so: the agent never joins.
func TestWatchPilotEndsAtOnceForAJobBeingRequeued(t *testing.T) {
	q := &pilotQstat{t: t, substates: []int{SubstateRerun}}
	ctx, stop := WatchPilot(context.Background(), q, "68.gleaner-pbs", PilotWatch{Every: time.Hour, For: time.Hour})
	defer stop()
	require.Error(t, ctx.Err(), "ended before WatchPilot returned")
	var ending *RunEndingError
	require.ErrorAs(t, context.Cause(ctx), &ending)
	assert.Equal(t, "PBS job 68.gleaner-pbs is being requeued (state R, substate 60)", ending.Error())
}

// A job running at the first look that PBS then starts to requeue ends
// the context at the next look.
func TestWatchPilotEndsWhenTheJobStartsEnding(t *testing.T) {
	q := &pilotQstat{t: t, substates: []int{SubstateRunning, SubstateRunning, SubstateRerun}}
	ctx, stop := WatchPilot(context.Background(), q, "68.gleaner-pbs", PilotWatch{Every: 10 * time.Millisecond, For: time.Hour})
	defer stop()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not see the requeue")
	}
	var ending *RunEndingError
	require.ErrorAs(t, context.Cause(ctx), &ending)
	assert.Equal(t, 3, q.n())
}

// A running job, a qstat that fails: no ending; the looks stop after For;
// the caller's cancel is no ending either.
func TestWatchPilotRunningJob(t *testing.T) {
	for name, q := range map[string]*pilotQstat{
		"running":      {t: t, substates: []int{SubstateRunning}},
		"qstat failed": {t: t, fail: true},
	} {
		t.Run(name, func(t *testing.T) {
			q.t = t
			ctx, stop := WatchPilot(context.Background(), q, "68.gleaner-pbs", PilotWatch{Every: 5 * time.Millisecond, For: 100 * time.Millisecond})
			time.Sleep(300 * time.Millisecond)
			require.NoError(t, ctx.Err())
			n := q.n()
			assert.GreaterOrEqual(t, n, 3, "looked again")
			time.Sleep(50 * time.Millisecond)
			assert.Equal(t, n, q.n(), "no look after For")
			stop()
			require.Error(t, ctx.Err())
			assert.ErrorIs(t, context.Cause(ctx), context.Canceled)
		})
	}
}
