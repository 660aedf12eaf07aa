package integration_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	tclient "go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// The pool's log survives a SIGKILL of the worker and a restart of the
// Temporal server, each after the pool has kept chunks and while trials
// run: read back afterwards, it is whole (chunks numbered without a hole,
// each starting where the one before ended, every entry kept), every
// trial registered, started and left once, and the worker's nodes, which
// never left the pool, have spans covering all the time from their first
// appearance to now without a hole.
func TestPoolLogSurvivesWorkerKillAndServerRestart(t *testing.T) {
	srv := startServer(t, devserver.Options{DBFile: filepath.Join(t.TempDir(), "temporal.db")})
	const queue, name, trials = "pool-log", "pool-log", 4
	w := startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: queue})
	// The pool, started before the campaign registers with it: a solve
	// every second (an entry each), a chunk every 6 entries.
	if _, err := srv.Client().ExecuteWorkflow(testContext(t, time.Minute),
		tclient.StartWorkflowOptions{ID: gleaner.PoolWorkflowID(name), TaskQueue: queue}, workflows.PoolWorkflowName,
		workflows.PoolInput{Name: name, PollInterval: 300 * time.Millisecond, Debounce: 200 * time.Millisecond,
			AllocatePeriod: time.Second, LogChunk: 6}); err != nil {
		t.Fatalf("starting pool %s: %v", name, err)
	}
	spec := testenv.MLPSpec(t, name, trials, 2, 400, 20)
	run := startCampaign(t, srv.Client(), queue, spec)
	c := client.New(srv.Client(), client.Options{TaskQueue: queue, Namespace: srv.Namespace(), UIBase: "-"})

	// kept waits until the pool has kept more chunks than it had.
	kept := func(what string) int {
		var n int
		have := -1
		waitFor(t, 2*time.Minute, what, func() (bool, error) {
			_, live, err := c.PoolLog(testContext(t, 30*time.Second), name, 1<<30)
			if err != nil {
				return false, err
			}
			if have < 0 {
				have = live.Chunks
			}
			n = live.Chunks
			return n > have, nil
		})
		return n
	}
	var faults []int // the pool's chunk count at each fault
	faults = append(faults, kept("the pool to keep a chunk before the first fault"))
	t.Logf("SIGKILL of the worker after %d chunks", faults[0])
	w.Kill()
	w.Start()
	faults = append(faults, kept("the pool to keep a chunk after the worker's restart"))
	t.Logf("restart of the Temporal server after %d chunks", faults[1])
	if err := srv.Restart(testContext(t, devserver.DefaultStartTimeout)); err != nil {
		t.Fatalf("restarting the dev server: %v", err)
	}
	after := kept("the pool to keep a chunk after the server's restart")

	res := campaignResult(t, srv.Client().GetWorkflow(testContext(t, time.Minute), run.GetID(), ""), 5*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != trials {
		t.Fatalf("result %s %+v, want %d completed", res.State, res.CampaignCounts, trials)
	}

	var chunks []gleaner.PoolRecords
	var live gleaner.PoolLog
	waitFor(t, time.Minute, "every chunk of the pool's log to be readable", func() (bool, error) {
		var err error
		chunks, live, err = c.PoolLog(testContext(t, time.Minute), name, 0)
		return err == nil && len(chunks) == live.Chunks && live.Chunks >= after, err
	})
	first := map[string]bool{}
	for _, n := range chunks[0].Start.Nodes {
		first[n.ID] = true
	}
	for _, ch := range chunks {
		for _, e := range ch.Events {
			for _, n := range e.Added {
				first[n.ID] = true
			}
		}
	}
	var always []string
	for id := range first {
		always = append(always, id)
	}
	if len(always) != 4 {
		t.Errorf("nodes in the log %v, want the worker's 4", always)
	}
	spans := testenv.CheckPoolLog(t, chunks, live, always...)

	var events []gleaner.PoolEvent
	for _, ch := range chunks {
		events = append(events, ch.Events...)
	}
	events = append(events, live.Events...)
	for i := 1; i <= trials; i++ {
		id := workflows.TrialWorkflowID(run.GetID(), i)
		var regs, deregs, starts int
		for _, e := range events {
			switch {
			case e.Kind == gleaner.PoolEventRegister && e.Trial == id:
				regs++
			case e.Kind == gleaner.PoolEventDeregister && e.Trial == id:
				deregs++
			case e.Kind == gleaner.PoolEventSolve:
				for _, ch := range e.Changes {
					if ch.Trial == id && ch.Change == gleaner.NodeChangeStart {
						starts++
					}
				}
			}
		}
		if regs == 0 || deregs != 1 || starts != 1 {
			t.Errorf("trial %s: %d registrations, %d deregistrations, %d starts; want ≥1, 1, 1", id, regs, deregs, starts)
		}
	}
	t.Logf("pool log: %d chunks (%v at the faults), %d entries pending, %d entries, %d spans", len(chunks),
		fmt.Sprint(faults), len(live.Events), len(events), len(spans))
}
