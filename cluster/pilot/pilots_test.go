package pilot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeScheduler answers from scripted jobs and claims and records what it
// was asked to do.
type fakeScheduler struct {
	jobs      []Job
	claims    []Claim
	nextID    int
	submitted []Request
	cancelled [][]string
	signalled map[syscall.Signal][]string
	cancelAll int
	planReads int
	// cancelAllFails are the errors of the next CancelAll calls, one each.
	cancelAllFails []error
	// cancelAllCtx records ctx.Err() at each CancelAll.
	cancelAllCtx []error
}

func (f *fakeScheduler) Name() string { return "fake" }

func (f *fakeScheduler) Submit(_ context.Context, req Request) (string, error) {
	f.nextID++
	f.submitted = append(f.submitted, req)
	return fmt.Sprint(100 + f.nextID), nil
}

func (f *fakeScheduler) Pilots(context.Context) ([]Job, error) { return slices.Clone(f.jobs), nil }

func (f *fakeScheduler) Cancel(_ context.Context, ids []string) error {
	f.cancelled = append(f.cancelled, ids)
	return nil
}

func (f *fakeScheduler) CancelAll(ctx context.Context) error {
	f.cancelAll++
	f.cancelAllCtx = append(f.cancelAllCtx, ctx.Err())
	if len(f.cancelAllFails) > 0 {
		err := f.cancelAllFails[0]
		f.cancelAllFails = f.cancelAllFails[1:]
		return err
	}
	// Cancelled: pending ones are gone, running ones ending.
	var left []Job
	for _, j := range f.jobs {
		if j.State == Running {
			j.State = Other
			left = append(left, j)
		}
	}
	f.jobs = left
	return nil
}

func (f *fakeScheduler) Signal(_ context.Context, sig syscall.Signal, ids []string) error {
	if f.signalled == nil {
		f.signalled = map[syscall.Signal][]string{}
	}
	f.signalled[sig] = append(f.signalled[sig], ids...)
	return nil
}

func (f *fakeScheduler) Plan(context.Context) ([]Claim, error) {
	f.planReads++
	return f.claims, nil
}

type fakePool struct {
	demand Demand
	sent   []map[string]time.Time
}

func (p *fakePool) Demand(context.Context) (Demand, error) { return p.demand, nil }

func (p *fakePool) SetIdleUntil(_ context.Context, m map[string]time.Time) error {
	p.sent = append(p.sent, m)
	return nil
}

var t0 = time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)

func pending(id string) Job { return Job{ID: id, State: Pending} }

func running(id, node string, end time.Time) Job {
	return Job{ID: id, State: Running, Nodes: []string{node}, End: end}
}

func jobAt(node string, start time.Time) Claim {
	return Claim{Kind: ClaimJob, Nodes: []string{node}, Start: start, By: "job on " + node}
}

// testLimits are a partition of 6 nodes, 20 s grace, a 2 s plan cycle.
var testLimits = Limits{Nodes: 6, Grace: 20 * time.Second, Cycle: 2 * time.Second, GraceSetting: "the grace"}

func newTestPilots(t *testing.T, set Settings, sched *fakeScheduler, pool *fakePool, now *time.Time) *Pilots {
	t.Helper()
	set.Pool = "p"
	set.Location = time.UTC
	set.Now = func() time.Time { return *now }
	p, err := New(set, testLimits, sched, pool, nil)
	require.NoError(t, err)
	return p
}

// TestStep is one round of the policy: what it submits, cancels and
// yields for a demand, the pilots and the plan.
func TestStep(t *testing.T) {
	end := t0.Add(time.Hour)
	for _, tc := range []struct {
		name   string
		set    Settings
		demand Demand
		jobs   []Job
		claims []Claim
		// want: submitted count, cancelled ids, yielded ids
		submit          int
		cancel, yielded []string
	}{
		{name: "up to max_pending waiting", set: Settings{MaxPending: 3}, demand: Demand{Trials: 3, Wanted: 10},
			jobs: []Job{pending("5")}, submit: 2},
		{name: "no more than the trials want", demand: Demand{Trials: 1, Wanted: 2}, submit: 2},
		{name: "no more than max_pilots in all", set: Settings{MaxPilots: 4}, demand: Demand{Trials: 1, Wanted: 10},
			jobs: []Job{running("1", "g1", end), running("2", "g2", end), running("3", "g3", end)}, submit: 1},
		{name: "none while no trial wants nodes", demand: Demand{Trials: 2, Wanted: 0}},
		{name: "a running pilot still joining counts as a node on its way", demand: Demand{Trials: 2, Wanted: 3, Nodes: []string{"g1"}, NodesKnown: true},
			jobs: []Job{running("1", "g1", end), running("2", "g2", end)}, submit: 2},
		{name: "waiting pilots beyond what joining ones bring go", demand: Demand{Trials: 1, Wanted: 2, NodesKnown: true},
			jobs: []Job{running("1", "g1", end), pending("5"), pending("6")}, cancel: []string{"6"}},
		{name: "waiting pilots nobody wants go, the newest first", demand: Demand{Trials: 1, Wanted: 1},
			jobs: []Job{pending("5"), pending("6"), pending("7")}, cancel: []string{"7", "6"}},
		{name: "without trials every waiting pilot goes, running ones stay", demand: Demand{},
			jobs: []Job{pending("5"), running("6", "g2", end)}, cancel: []string{"5"}},
		{name: "ending pilots are left alone", demand: Demand{},
			jobs: []Job{{ID: "9", State: Other, Nodes: []string{"g9"}}}},
		{name: "a job claiming the node within yield", demand: Demand{Trials: 1},
			jobs:   []Job{running("6", "g2", end), running("7", "g3", end)},
			claims: []Claim{jobAt("g2", t0.Add(time.Second)), jobAt("g3", t0.Add(time.Hour/2))}, yielded: []string{"6"}},
		{name: "an overdue job claims the node now", demand: Demand{Trials: 1},
			jobs: []Job{running("6", "g2", end)}, claims: []Claim{jobAt("g2", t0.Add(-time.Minute))}, yielded: []string{"6"}},
		{name: "a reservation claiming the node within yield", demand: Demand{Trials: 1},
			jobs:   []Job{running("6", "g2", end)},
			claims: []Claim{{Kind: ClaimReservation, Nodes: []string{"g2"}, Start: t0.Add(time.Second), By: "reservation maint"}}, yielded: []string{"6"}},
		{name: "an active reservation ends nothing", demand: Demand{Trials: 1},
			jobs:   []Job{running("6", "g2", end)},
			claims: []Claim{{Kind: ClaimReservation, Nodes: []string{"g2"}, Start: t0.Add(-time.Minute), By: "reservation maint"}}},
		{name: "the pilot's own end is no claim", demand: Demand{Trials: 1},
			jobs: []Job{running("6", "g2", t0.Add(time.Second))}},
		{name: "a negative yield never yields", set: Settings{Yield: -1}, demand: Demand{Trials: 1},
			jobs: []Job{running("6", "g2", end)}, claims: []Claim{jobAt("g2", t0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sched := &fakeScheduler{jobs: tc.jobs, claims: tc.claims}
			now := t0
			p := newTestPilots(t, tc.set, sched, &fakePool{demand: tc.demand}, &now)
			st, err := p.Step(context.Background())
			require.NoError(t, err)
			assert.Len(t, st.Submitted, tc.submit, "submitted")
			assert.Len(t, sched.submitted, tc.submit)
			assert.Equal(t, tc.cancel, st.Cancelled, "cancelled")
			if tc.cancel == nil {
				assert.Empty(t, sched.cancelled)
			} else {
				assert.Equal(t, [][]string{tc.cancel}, sched.cancelled)
			}
			assert.Equal(t, tc.yielded, st.Yielded, "yielded")
			assert.Equal(t, tc.yielded, sched.signalled[syscall.SIGTERM], "signalled")
		})
	}
}

func TestRequestCarriesTheTimesAndTheAgentsArguments(t *testing.T) {
	sched := &fakeScheduler{}
	now := t0
	p := newTestPilots(t, Settings{GPUs: 2, AgentArgs: []string{"--data-dir", "/shared/gl"}, AgentEnv: []string{"TEMPORAL_API_KEY=k"}},
		sched, &fakePool{demand: Demand{Trials: 1, Wanted: 1}}, &now)
	_, err := p.Step(context.Background())
	require.NoError(t, err)
	require.Len(t, sched.submitted, 1)
	assert.Equal(t, Request{Nodes: 1, Time: 2 * time.Hour, TimeMin: 10 * time.Minute, Lead: 30 * time.Second, GPUs: 2,
		Agent: []string{"--pool", "p", "--stop-timeout", "16s", "--data-dir", "/shared/gl"}, Env: []string{"TEMPORAL_API_KEY=k"}}, sched.submitted[0])
}

func TestRunningPilotsReleasedAfterIdleRelease(t *testing.T) {
	sched := &fakeScheduler{jobs: []Job{running("6", "g2", t0.Add(time.Hour))}}
	pool := &fakePool{demand: Demand{Trials: 1}}
	now := t0
	p := newTestPilots(t, Settings{IdleRelease: time.Minute}, sched, pool, &now)
	step := func() Status {
		t.Helper()
		st, err := p.Step(context.Background())
		require.NoError(t, err)
		return st
	}
	step()
	pool.demand = Demand{}
	now = now.Add(59 * time.Second)
	assert.Empty(t, step().Cancelled, "within idle_release of the last trial")
	now = now.Add(time.Second)
	assert.Equal(t, []string{"6"}, step().Cancelled)
}

func TestAPilotYieldsOnce(t *testing.T) {
	sched := &fakeScheduler{jobs: []Job{running("6", "g2", t0.Add(time.Hour))}, claims: []Claim{jobAt("g2", t0)}}
	now := t0
	p := newTestPilots(t, Settings{}, sched, &fakePool{demand: Demand{Trials: 1}}, &now)
	for range 3 {
		_, err := p.Step(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"6"}, sched.signalled[syscall.SIGTERM], "told once, then left to leave or to the scheduler")

	// Gone from the list and back (a requeued pilot keeps its id): told again.
	sched.jobs = nil
	_, err := p.Step(context.Background())
	require.NoError(t, err)
	sched.jobs = []Job{running("6", "g2", t0.Add(time.Hour))}
	_, err = p.Step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"6", "6"}, sched.signalled[syscall.SIGTERM])
}

func TestEstimatesSentWhenTheyChangeAndPlanReadOnlyForRunningPilots(t *testing.T) {
	sched := &fakeScheduler{claims: []Claim{jobAt("g2", t0.Add(time.Hour/2))}}
	pool := &fakePool{demand: Demand{Trials: 1}}
	now := t0
	p := newTestPilots(t, Settings{}, sched, pool, &now)
	step := func() {
		t.Helper()
		_, err := p.Step(context.Background())
		require.NoError(t, err)
	}
	step()
	assert.Zero(t, sched.planReads, "no running pilot: no plan read")
	assert.Equal(t, []map[string]time.Time{{}}, pool.sent, "the first (empty) map is sent")
	sched.jobs = []Job{running("6", "g2", t0.Add(time.Hour))}
	step()
	step()
	assert.Equal(t, []map[string]time.Time{{}, {"g2": t0.Add(time.Hour / 2)}}, pool.sent)
	sched.claims = nil
	step()
	assert.Equal(t, map[string]time.Time{"g2": t0.Add(time.Hour)}, pool.sent[2], "the pilot's own end")
}

func TestGraceWarnedOnce(t *testing.T) {
	var logs []string
	sched := &fakeScheduler{}
	p, err := New(Settings{Pool: "p"}, testLimits, sched, &fakePool{demand: Demand{Trials: 1, MaxGrace: time.Minute}},
		func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) })
	require.NoError(t, err)
	for range 2 {
		_, err = p.Step(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, 1, strings.Count(strings.Join(logs, "\n"), "fake: warning: a trial's grace_period 1m0s does not fit the grace 20s (a pilot's agent has 16s to leave)"))
}

func TestShutdownCancelsAll(t *testing.T) {
	sched := &fakeScheduler{jobs: []Job{pending("5"), running("6", "g2", t0)}}
	p, err := New(Settings{Pool: "p"}, testLimits, sched, &fakePool{}, nil)
	require.NoError(t, err)
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, 1, sched.cancelAll)
	assert.Empty(t, sched.cancelled, "nothing left to cancel by id")
}

// A scancel killed by the user's second Ctrl-C, or a controller that does
// not answer for a while: Shutdown tries again until the scheduler
// answers, and cancels by id what is still listed.
func TestShutdownTriesAgainUntilNoPilotIsLeft(t *testing.T) {
	killed := fmt.Errorf("scancel: signal: interrupt")
	sched := &fakeScheduler{jobs: []Job{pending("5"), running("6", "g2", t0)}, cancelAllFails: []error{killed, killed}}
	var logs []string
	p, err := New(Settings{Pool: "p"}, testLimits, sched, &fakePool{},
		func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) })
	require.NoError(t, err)
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, 3, sched.cancelAll)
	assert.Contains(t, strings.Join(logs, "\n"), "fake: cancelling pool p's pilots (try 2): scancel: signal: interrupt")

	// The scheduler says it cancelled them, yet one still waits: cancelled by id.
	sched = &fakeScheduler{jobs: []Job{pending("7")}, cancelAllFails: []error{nil}}
	p, err = New(Settings{Pool: "p"}, testLimits, sched, &fakePool{}, nil)
	require.NoError(t, err)
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, [][]string{{"7"}}, sched.cancelled)
}

func TestShutdownGivesUpWhenItsContextEnds(t *testing.T) {
	down := fmt.Errorf("scancel: exit status 1: Unable to contact slurm controller")
	sched := &fakeScheduler{cancelAllFails: []error{down, down, down, down, down, down, down, down}}
	p, err := New(Settings{Pool: "p"}, testLimits, sched, &fakePool{}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	err = p.Shutdown(ctx)
	assert.ErrorContains(t, err, "fake: cancelling pool p's pilots: gave up after")
	assert.ErrorContains(t, err, "Unable to contact slurm controller")
	assert.GreaterOrEqual(t, sched.cancelAll, 2)
}

func TestRunShutsDownWhenItsContextEnds(t *testing.T) {
	sched := &fakeScheduler{}
	p, err := New(Settings{Pool: "p", Interval: time.Hour}, testLimits, sched, &fakePool{}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	rounds := 0
	require.NoError(t, p.Run(ctx, func(Status, error) { rounds++; cancel() }))
	assert.Equal(t, 1, rounds)
	assert.Equal(t, 1, sched.cancelAll)
	assert.Equal(t, []error{nil}, sched.cancelAllCtx, "the pilots are cancelled in a context of their own, not the one that ended")
}
