package workflows

import (
	"maps"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// Pipelined inline trials. Between one inline trial's end and the next
// one's start on the same nodes lies a round trip through the server: the
// run's completion, a workflow task of the campaign, the next RunTrial
// scheduled, a worker picking it up, its launch. On trials of a second
// that is a tenth of the campaign's time. A pipelined campaign hides it:
// while a run trains, the campaign already schedules the next trial's run
// on the same nodes, and the worker starts that run's trainer the moment
// the one before it has exited (RunTrial holds an inline run's nodes in
// the worker until its trainer and all it started are gone; see
// activities/gate.go). The two runs' activities may be scheduled in one
// workflow task and the server may hand the queued one to the worker
// first: RunTrialInput.After names the run it is queued behind, and the
// worker does not let it overtake that run.
//
// Only searchers whose next trial does not depend on the last results
// are pipelined (pipelineAlgorithms): the campaign asks them for up to
// (1+PipelineDepth) × max_concurrent trials, max_concurrent of them
// training and PipelineDepth waiting behind each. A searcher that learns from results (TPE, ASHA,
// PBT, …) would sample with one result fewer per slot, or, like
// synchronous PBT, needs every result of a generation before it creates
// the next: those campaigns run as before.
//
// Durability is the activity's: a queued run is a scheduled RunTrial like
// any other, so a worker that dies while it waits loses nothing (its
// heartbeat times out and it is retried); a queued run the campaign stops
// (pause, stop, nodes taken back, continue-as-new) ends "stopped before
// the trainer started" and its trial waits for nodes again.

// pipelineAlgorithms are the searchers whose trials are pipelined.
var pipelineAlgorithms = []string{hpo.AlgorithmRandom, hpo.AlgorithmGrid, hpo.AlgorithmQuasiRandom}

// PipelineMaxConcurrent is the most trials in flight (max_concurrent) a
// pipelined campaign has. Every run of an inline campaign is an activity
// of its one workflow, and the server starts, heartbeats and completes
// each under that workflow's lock; queued runs double the activities it
// holds. With 50 in flight that hides the round trip between two trials;
// with 200 trials of 0.1 s the server cannot start runs as fast as they
// end, queued or not, and the doubled activities only slowed it
// (docs/benchmarks.md, "Orchestration at the limit").
const PipelineMaxConcurrent = 100

// Pipelined reports whether a campaign of this spec (after WithDefaults)
// pipelines its trials: they run inline, by a searcher that does not learn
// from results, at most PipelineMaxConcurrent in flight.
func Pipelined(spec gleaner.CampaignSpec) bool {
	return spec.Trial.Inline && slices.Contains(pipelineAlgorithms, spec.Search.Algorithm) &&
		spec.Budget.MaxConcurrent <= PipelineMaxConcurrent
}

// PipelineDepth is how many runs a pipelined campaign queues behind each
// training run. One hides the round trip between two trials while the
// server keeps up; under load that round trip (the run's completion, a
// campaign task, the next run scheduled and handed to the worker) took
// longer than a one-second trial, and the node sat idle until it came
// (node idle p95 1.3–2.6 s, docs/benchmarks.md). Two give it the length of
// two trials.
const PipelineDepth = 2

// pipelineVersion decides, once per run, how this run pipelines its
// trials (nil: it does not): runs recorded before pipelining existed did
// not, those recorded before PipelineDepth was two queued one run behind
// each, and those before version 3 let queued runs train while the run
// drained for continue-as-new.
func pipelineVersion(ctx workflow.Context, spec gleaner.CampaignSpec) *pipeline {
	if !Pipelined(spec) {
		return nil
	}
	p := &pipeline{behind: map[string]string{}, depth: PipelineDepth, drainCancels: true}
	switch v := workflow.GetVersion(ctx, "inline-pipeline", workflow.DefaultVersion, 3); v {
	case workflow.DefaultVersion:
		return nil
	case 1, 2:
		p.depth, p.drainCancels = int(v), false
	}
	return p
}

// window is how many trials the campaign keeps in flight: max_concurrent,
// and the runs queued behind them when pipelined.
func (c *campaign) window() int {
	if c.inline != nil && c.inline.pipe != nil {
		return (1 + c.inline.pipe.depth) * c.spec.Budget.MaxConcurrent
	}
	return c.spec.Budget.MaxConcurrent
}

// pipeline is a pipelined inliner's queue: which run waits behind which.
type pipeline struct {
	// behind maps a queued run's key to the key of the run it waits for
	// (its predecessor on the same nodes, training or queued itself).
	behind map[string]string
	// depth is the most runs queued behind one training run.
	depth int
	// drainCancels: a run draining for continue-as-new cancels its
	// queued runs at once (they have not trained; the next run starts
	// them again) instead of waiting for them as for training ones. A
	// queued run the server had not yet handed to the worker, with 100
	// in flight, held the drain for its whole wait (30 s) while every
	// node sat idle (docs/benchmarks.md).
	drainCancels bool
}

// cancelQueued stops every queued run of x that has not begun to train.
func (p *pipeline) cancelQueued(x *inliner) {
	for _, key := range x.runKeys() {
		if _, queued := p.behind[key]; queued {
			if r := x.running[key]; !r.stopping {
				r.stopping = true
				r.cancel()
			}
		}
	}
}

// place is a run's place in its queue: 0 training, 1 next, 2 after that.
func (p *pipeline) place(key string) int {
	n := 0
	for {
		before, queued := p.behind[key]
		if !queued {
			return n
		}
		key, n = before, n+1
	}
}

// queuedFirst orders keys (sorted) with the queued runs first, last in
// line first, so that stopping them all cancels each queued run before
// the run it waits for ends and frees its nodes.
func (p *pipeline) queuedFirst(keys []string) {
	slices.SortStableFunc(keys, func(a, b string) int { return p.place(b) - p.place(a) })
}

// queue gives each slot whose line is shorter than the pipeline's depth
// the next waiting trial, behind its last run, on the same nodes, and
// marks as training the queued runs whose predecessor has ended. It runs
// after step has launched what fits on free nodes.
func (x *inliner) queue(ctx workflow.Context) {
	p, st := x.pipe, x.st()
	for _, key := range slices.Sorted(maps.Keys(p.behind)) {
		before := p.behind[key]
		if x.running[key] == nil {
			delete(p.behind, key)
		} else if x.running[before] == nil {
			delete(p.behind, key)
		}
	}
	for _, key := range x.runKeys() {
		if _, queued := p.behind[key]; queued {
			continue
		}
		if i := x.find(key); i >= 0 && st.Trials[i].Progress.State == TrialPending {
			// It trains from now on: its time to the end is what the
			// pool's JPA measures (measure), not its wait in the queue.
			r := x.running[key]
			r.launched = workflow.Now(ctx)
			t := &st.Trials[i]
			t.Progress.State, t.Progress.Nodes = TrialRunning, r.nodes
		}
	}
	waitedOn := map[string]bool{}
	for _, before := range p.behind {
		waitedOn[before] = true
	}
	// The last run of each line that is not full, the shortest lines
	// first.
	tails := slices.DeleteFunc(x.runKeys(), func(k string) bool {
		return waitedOn[k] || p.place(k) >= p.depth || x.running[k].stopping || x.shouldStop(k)
	})
	slices.SortStableFunc(tails, func(a, b string) int { return p.place(a) - p.place(b) })
	for _, t := range slices.Clone(st.Trials) {
		if len(tails) == 0 {
			return
		}
		if x.running[t.Key] != nil || t.Stop {
			continue
		}
		tail := x.running[tails[0]]
		tails = tails[1:]
		x.launchAfter(ctx, t.Key, tail.nodes, tail.queue, RunRef(st.Trials[x.find(tail.key)].Input, tail.run))
		p.behind[t.Key] = tail.key
		q := &st.Trials[x.find(t.Key)]
		q.Progress.State, q.Progress.Nodes = TrialPending, nil
	}
}
