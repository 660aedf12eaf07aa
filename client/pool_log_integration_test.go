package client_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	tclient "go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// blinkingNodes are slots 0 … n−1, the last of which its batch scheduler
// takes back and gives again every period.
type blinkingNodes struct {
	mu    sync.Mutex
	n     int
	start time.Time
	every time.Duration
}

func (b *blinkingNodes) Idle(context.Context, time.Time) ([]cluster.Node, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.n
	if (time.Since(b.start)/b.every)%2 == 1 {
		k--
	}
	var out []cluster.Node
	for i := range k {
		out = append(out, cluster.Node{ID: cluster.SlotID(i), Type: cluster.CPUNodeType})
	}
	return out, nil
}

// A pool with a campaign of a few trials, one of its nodes coming and
// going, keeps its log in chunks (LogChunk 6) that PoolLog reads back,
// from any chunk on: whole, each chunk starting where the one before
// ended, and NodeSpans covering every node from its first appearance
// whenever it was in the pool; each trial registered, started and left.
func TestPoolLogReadsChunksAndSpans(t *testing.T) {
	srv := testenv.DevServer(t, devserver.Options{})
	nodes := &blinkingNodes{n: 4, start: time.Now(), every: 1500 * time.Millisecond}
	testenv.Worker(t, srv, taskQueue, nodes)
	c := client.New(srv.Client(), client.Options{TaskQueue: taskQueue, Namespace: srv.Namespace()})

	const name = "pool-log"
	_, err := srv.Client().ExecuteWorkflow(timeout(t, time.Minute),
		tclient.StartWorkflowOptions{ID: gleaner.PoolWorkflowID(name), TaskQueue: taskQueue}, workflows.PoolWorkflowName,
		workflows.PoolInput{Name: name, PollInterval: 300 * time.Millisecond, Debounce: 200 * time.Millisecond,
			AllocatePeriod: 2 * time.Second, LogChunk: 6})
	if err != nil {
		t.Fatalf("starting pool %s: %v", name, err)
	}
	spec := testenv.MLPSpec(t, name, 3, 2, 150, 20) // pool "pool-log"
	if _, err := c.Submit(timeout(t, time.Minute), spec); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if res, err := c.Wait(timeout(t, 3*time.Minute), name); err != nil || res.Completed != 3 {
		t.Fatalf("Wait = %+v, %v; want 3 completed", res, err)
	}

	var chunks []gleaner.PoolRecords
	var live gleaner.PoolLog
	eventually(t, time.Minute, "two chunks of the pool's log", func() error {
		chunks, live, err = c.PoolLog(timeout(t, time.Minute), name, 0)
		if err == nil && (len(chunks) < 2 || len(chunks) != live.Chunks) {
			err = fmt.Errorf("%d chunks read, %d kept", len(chunks), live.Chunks)
		}
		return err
	})
	spans := testenv.CheckPoolLog(t, chunks, live, cluster.SlotID(0), cluster.SlotID(1), cluster.SlotID(2))
	if len(spans) == 0 {
		t.Fatal("no node spans")
	}

	// Every trial registered, started on nodes, held them, and left.
	var all []gleaner.PoolEvent
	for _, ch := range chunks {
		if ch.Pool != name {
			t.Errorf("chunk %d of pool %q", ch.Chunk, ch.Pool)
		}
		all = append(all, ch.Events...)
	}
	all = append(all, live.Events...)
	for i := 1; i <= 3; i++ {
		id := gleaner.TrialWorkflowID(gleaner.CampaignWorkflowID(name), i)
		var regs, deregs, starts int
		for _, e := range all {
			switch {
			case e.Kind == gleaner.PoolEventRegister && e.Trial == id:
				regs++
			case e.Kind == gleaner.PoolEventDeregister && e.Trial == id:
				deregs++
			case e.Kind == gleaner.PoolEventSolve:
				for _, ch := range e.Changes {
					if ch.Trial == id && ch.Change == gleaner.NodeChangeStart && ch.Campaign == spec.Name {
						starts++
					}
				}
			}
		}
		held := slices.ContainsFunc(spans, func(s gleaner.NodeSpan) bool { return s.Trial == id && s.Campaign == spec.Name })
		if regs == 0 || deregs != 1 || starts != 1 || !held {
			t.Errorf("trial %s: %d registrations, %d deregistrations, %d starts, held nodes %v; want ≥1, 1, 1, true", id, regs, deregs, starts, held)
		}
	}

	changes := map[string]int{}
	removed := 0
	for _, e := range all {
		removed += len(e.Removed)
		for _, ch := range e.Changes {
			changes[ch.Change]++
		}
	}
	t.Logf("%d chunks and %d entries pending: %d entries, %d spans, %d node removals, changes %v",
		len(chunks), len(live.Events), len(all), len(spans), removed, changes)

	// From a later chunk on: only those; past the last: none.
	later, live2, err := c.PoolLog(timeout(t, time.Minute), name, 1)
	if err != nil || len(later) < 1 || later[0].Chunk != 1 || len(later) != live2.Chunks-1 {
		t.Errorf("PoolLog from chunk 1: %d chunks (first %v), %d kept, %v", len(later), firstChunk(later), live2.Chunks, err)
	}
	if none, _, err := c.PoolLog(timeout(t, time.Minute), name, live2.Chunks+3); err != nil || len(none) != 0 {
		t.Errorf("PoolLog past the last chunk: %d chunks, %v", len(none), err)
	}
	if _, _, err := c.PoolLog(timeout(t, time.Minute), "no-such-pool", 0); err == nil {
		t.Error("PoolLog of a pool that does not run: no error")
	}
}

func firstChunk(cs []gleaner.PoolRecords) any {
	if len(cs) == 0 {
		return "none"
	}
	return cs[0].Chunk
}
