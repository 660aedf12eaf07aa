package workflows_test

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	wf "github.com/gleaner-hpc/gleaner/workflows"
)

func (e *poolEnv) poolLog(t *testing.T) wf.PoolLog {
	v, err := e.QueryWorkflow(wf.QueryPoolLog)
	require.NoError(t, err)
	var l wf.PoolLog
	require.NoError(t, v.Get(&l))
	return l
}

// kinds is the log's kinds, in order, as "nodes,register,solve".
func kinds(events []wf.PoolEvent) string {
	var k []string
	for _, e := range events {
		k = append(k, string(e.Kind))
	}
	return strings.Join(k, ",")
}

// A registration and its allocation are logged (the nodes polled, the
// registration, the solve with the trial's start); a node taken back
// while the trial holds it is a nodes event with Removed, and the next
// solve shrinks the trial, with its measured throughput; the status
// query leaves the log out and shows the prediction the allocator used;
// a trial that left and registers again resumes.
func TestPoolLogsRegistrationsNodesAndSolves(t *testing.T) {
	e := newPoolEnv(t, "a")
	e.nodes.set("n1", "n2", "n3")
	e.at(time.Second, func() { e.SignalWorkflow(wf.SignalRegisterTrial, reg("a", 1, 3)) })
	e.at(2*time.Second, func() {
		e.SignalWorkflow(wf.SignalProfile, wf.ThroughputProfile{TrialID: "a", Nodes: 2, Throughput: 50})
	})
	var gone string
	e.at(3*time.Second, func() {
		l := e.poolLog(t)
		assert.Equal(t, "p", l.Pool)
		assert.Equal(t, 0, l.Chunks)
		assert.False(t, l.Start.At.IsZero())
		assert.Empty(t, l.Start.Nodes, "the log starts before the first poll")
		require.Equal(t, "nodes,register,solve", kinds(l.Events))
		assert.Len(t, l.Events[0].Added, 3)
		assert.Equal(t, wf.PoolEvent{Kind: gleaner.PoolEventRegister, Trial: "a", Campaign: "c", At: l.Events[1].At}, l.Events[1])
		s := l.Events[2]
		assert.Equal(t, gleaner.PoolTriggerRegister, s.Trigger)
		assert.Equal(t, int64(1), s.Epoch)
		require.NotNil(t, s.Solve)
		assert.Equal(t, 1, s.Solve.Changed)
		require.Len(t, s.Changes, 1)
		c := s.Changes[0]
		assert.Equal(t, gleaner.NodeChangeStart, c.Change)
		assert.Equal(t, "a", c.Trial)
		assert.Equal(t, "c", c.Campaign)
		assert.Len(t, c.Nodes, 3)
		assert.Empty(t, c.Before)
		assert.Equal(t, e.last("a").Nodes, c.Nodes)

		v, err := e.QueryWorkflow(wf.QueryStatus)
		require.NoError(t, err)
		var st wf.PoolStatus
		require.NoError(t, v.Get(&st))
		assert.Nil(t, st.Log, "the status leaves the log out")
		assert.True(t, st.LogStart.At.IsZero())
		require.Len(t, st.Trials, 1)
		pred := st.Trials[0].Predicted
		require.NotEmpty(t, pred)
		assert.Equal(t, 1, pred[0].Nodes)
		assert.Equal(t, 3, pred[len(pred)-1].Nodes)
		assert.True(t, st.Trials[0].Held)

		gone = c.Nodes[1]
		var rest []string
		for _, n := range []string{"n1", "n2", "n3"} {
			if n != gone {
				rest = append(rest, n)
			}
		}
		e.nodes.set(rest...)
	})
	e.at(6*time.Second, func() {
		l := e.poolLog(t)
		require.Equal(t, "nodes,register,solve,nodes,solve", kinds(l.Events))
		n := l.Events[3]
		assert.Equal(t, []string{gone}, n.Removed)
		assert.Empty(t, n.Added)
		assert.Equal(t, 50.0, n.Measured, "a holds two nodes still in the pool, measured at 2")
		s := l.Events[4]
		assert.Equal(t, gleaner.PoolTriggerNodes+","+gleaner.PoolTriggerProfile, s.Trigger)
		assert.Equal(t, int64(2), s.Epoch)
		require.Len(t, s.Changes, 1)
		c := s.Changes[0]
		assert.Equal(t, gleaner.NodeChangeShrink, c.Change)
		assert.Contains(t, c.Before, gone)
		assert.NotContains(t, c.Nodes, gone)
		assert.Len(t, c.Nodes, 2)
		assert.Equal(t, 50.0, s.Measured)
		e.SignalWorkflow(wf.SignalDeregisterTrial, wf.DeregisterTrial{TrialID: "a"})
	})
	e.at(8*time.Second, func() {
		l := e.poolLog(t)
		require.Equal(t, "nodes,register,solve,nodes,solve,deregister", kinds(l.Events), "no solve without trials")
		d := l.Events[5]
		assert.Equal(t, "a", d.Trial)
		assert.Equal(t, "c", d.Campaign)
		assert.Zero(t, d.Measured)
		// The node spans: n-gone held by a until it left, the others
		// held by a until it deregistered, then idle.
		spans := gleaner.NodeSpans(nil, l)
		held := map[string]int{}
		for _, sp := range spans {
			if sp.Trial == "a" {
				held[sp.Node]++
				assert.Equal(t, "c", sp.Campaign)
				assert.False(t, sp.To.IsZero())
			}
		}
		assert.Len(t, held, 3)
		// Back from a pause: its start is a resume.
		e.SignalWorkflow(wf.SignalRegisterTrial, reg("a", 1, 3))
	})
	e.at(9500*time.Millisecond, func() {
		l := e.poolLog(t)
		require.Equal(t, "nodes,register,solve,nodes,solve,deregister,register,solve", kinds(l.Events))
		s := l.Events[7]
		require.Len(t, s.Changes, 1)
		assert.Equal(t, gleaner.NodeChangeResume, s.Changes[0].Change)
		assert.Equal(t, gleaner.PoolTriggerRegister, s.Trigger)
	})
	e.endAt(11 * time.Second)
	e.ExecuteWorkflow(wf.PoolWorkflowName, poolInput())
	next := e.carried(t)
	require.True(t, strings.HasPrefix(kinds(next.State.Log), "nodes,register,solve,nodes,solve,deregister,register,solve"),
		"the log is carried: %s", kinds(next.State.Log))
	require.Positive(t, next.State.LogBytes)
	require.Empty(t, next.State.Departed, "a is back")
}

// chunkRecorder is a PoolRecords workflow that records the chunks, with
// the workflow ids they ran under and their parent's.
type chunkRecorder struct {
	mu     sync.Mutex
	chunks []wf.PoolRecords
	ids    []string
	parent []string
	kinds  []string
}

func (r *chunkRecorder) register(e *poolEnv) {
	e.RegisterWorkflowWithOptions(func(ctx workflow.Context, in wf.PoolRecords) (wf.PoolRecords, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		info := workflow.GetInfo(ctx)
		r.chunks = append(r.chunks, in)
		r.ids = append(r.ids, info.WorkflowExecution.ID)
		r.parent = append(r.parent, info.ParentWorkflowExecution.ID)
		kind, _ := workflow.GetTypedSearchAttributes(ctx).GetKeyword(wf.GleanerKind)
		r.kinds = append(r.kinds, kind)
		return in, nil
	}, workflow.RegisterOptions{Name: wf.PoolRecordsWorkflowName})
}

// toggle changes the pool's nodes every second for n seconds from
// start: every poll is a nodes event, and a solve.
func (e *poolEnv) toggle(start time.Duration, n int) {
	for i := range n {
		e.at(start+time.Duration(i)*time.Second, func() {
			if i%2 == 0 {
				e.nodes.set("n1", "n2")
			} else {
				e.nodes.set("n1", "n2", "n3")
			}
		})
	}
}

func sameJSON(t *testing.T, want, got any, msg string) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g), msg)
}

// With a small LogChunk the log is kept in chunks, numbered from 0 under
// the pool's chunk ids, each starting where the one before ended (the
// chunks read as one log: NodeSpans are those of the whole log at once);
// what is pending is carried across continue-as-new, and the next run
// numbers its chunks on.
func TestPoolLogChunksSurviveContinueAsNew(t *testing.T) {
	in := poolInput()
	in.LogChunk = 3
	e := newPoolEnv(t, "a")
	rec := e.log
	e.nodes.set("n1", "n2", "n3")
	e.at(500*time.Millisecond, func() { e.SignalWorkflow(wf.SignalRegisterTrial, reg("a", 1, 4)) })
	e.toggle(time.Second, 12)
	e.endAt(14 * time.Second)
	e.ExecuteWorkflow(wf.PoolWorkflowName, in)
	next := e.carried(t)
	st := next.State

	rec.mu.Lock()
	chunks := slices.Clone(rec.chunks)
	// 12 node changes and their solves in chunks of 3 (the test
	// environment may skip time past a poll on a loaded machine, so not
	// every change need be seen: 2 chunks are enough to number on).
	require.GreaterOrEqual(t, len(chunks), 2, "node changes and their solves in chunks of 3")
	require.Equal(t, len(chunks), st.LogChunks, "every chunk's workflow started before continue-as-new")
	for i, c := range chunks {
		assert.Equal(t, i, c.Chunk)
		assert.Equal(t, "p", c.Pool)
		assert.GreaterOrEqual(t, len(c.Events), 3)
		assert.Equal(t, wf.PoolRecordsWorkflowID(rec.parent[i], i), rec.ids[i])
		assert.Equal(t, wf.WorkflowKindPoolRecords, rec.kinds[i])
		if i > 0 {
			prev := chunks[i-1]
			assert.False(t, c.Start.At.Before(prev.Events[len(prev.Events)-1].At), "chunk %d starts after chunk %d's events", i, i-1)
		}
	}
	rec.mu.Unlock()
	assert.Less(t, len(st.Log), 3)
	live := wf.PoolLog{Pool: "p", Chunks: st.LogChunks, Start: st.LogStart, Events: st.Log}
	var all []wf.PoolEvent
	for _, c := range chunks {
		all = append(all, c.Events...)
	}
	whole := gleaner.NodeSpans(nil, wf.PoolLog{Start: chunks[0].Start, Events: append(all, st.Log...)})
	sameJSON(t, whole, gleaner.NodeSpans(chunks, live), "the chunks and the pending log read as the whole log")
	require.NotEmpty(t, whole)

	// The next run: the pending log is answered at once, and its first
	// chunk numbers on and starts from the carried snapshot.
	e2 := newPoolEnv(t, "a")
	rec2 := e2.log
	e2.nodes.set("n1", "n2")
	e2.at(100*time.Millisecond, func() {
		l := e2.poolLog(t)
		assert.Equal(t, st.LogChunks, l.Chunks)
		sameJSON(t, st.LogStart, l.Start, "the carried start")
		require.GreaterOrEqual(t, len(l.Events), len(st.Log))
		sameJSON(t, st.Log, l.Events[:len(st.Log)], "the carried entries come first")
	})
	e2.toggle(time.Second, 6)
	e2.endAt(8 * time.Second)
	e2.ExecuteWorkflow(wf.PoolWorkflowName, next)
	e2.carried(t)
	rec2.mu.Lock()
	defer rec2.mu.Unlock()
	require.NotEmpty(t, rec2.chunks)
	first := rec2.chunks[0]
	assert.Equal(t, st.LogChunks, first.Chunk)
	sameJSON(t, st.LogStart, first.Start, "the next chunk starts where the carried log did")
	sameJSON(t, st.Log, first.Events[:len(st.Log)], "and holds the carried entries")
}
