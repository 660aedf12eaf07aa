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
// twice max_concurrent trials, max_concurrent of them training and one
// waiting behind each. A searcher that learns from results (TPE, ASHA,
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

// pipelineVersion decides, once per run, whether this run pipelines its
// trials: runs recorded before pipelining existed did not.
func pipelineVersion(ctx workflow.Context, spec gleaner.CampaignSpec) bool {
	return Pipelined(spec) && workflow.GetVersion(ctx, "inline-pipeline", workflow.DefaultVersion, 1) == 1
}

// window is how many trials the campaign keeps in flight: max_concurrent,
// twice that when pipelined (one waiting behind each training).
func (c *campaign) window() int {
	if c.inline != nil && c.inline.pipe != nil {
		return 2 * c.spec.Budget.MaxConcurrent
	}
	return c.spec.Budget.MaxConcurrent
}

// pipeline is a pipelined inliner's queue: which run waits behind which.
type pipeline struct {
	// behind maps a queued run's key to the key of the run it waits for
	// (its predecessor on the same nodes).
	behind map[string]string
}

// queuedFirst orders keys (sorted) with the queued runs first, so that
// stopping them all cancels each queued run before the run it waits for
// ends and frees its nodes.
func (p *pipeline) queuedFirst(keys []string) {
	slices.SortStableFunc(keys, func(a, b string) int {
		_, qa := p.behind[a]
		_, qb := p.behind[b]
		switch {
		case qa && !qb:
			return -1
		case qb && !qa:
			return 1
		}
		return 0
	})
}

// queue gives each run that trains and has no successor yet the next
// waiting trial, on the same nodes, and marks as running the queued runs
// whose predecessor has ended. It runs after step has launched what fits
// on free nodes.
func (x *inliner) queue(ctx workflow.Context) {
	p, st := x.pipe, x.st()
	for _, key := range slices.Sorted(maps.Keys(p.behind)) {
		before := p.behind[key]
		if x.running[key] == nil {
			delete(p.behind, key)
		} else if x.running[before] == nil {
			delete(p.behind, key)
			r := x.running[key]
			// It trains from now on: its time to the end is what the
			// pool's JPA measures (measure), not its wait in the queue.
			r.launched = workflow.Now(ctx)
			if i := x.find(key); i >= 0 {
				t := &st.Trials[i]
				t.Progress.State, t.Progress.Nodes = TrialRunning, r.nodes
			}
		}
	}
	waiting := map[string]bool{}
	for _, before := range p.behind {
		waiting[before] = true
	}
	heads := slices.DeleteFunc(x.runKeys(), func(k string) bool {
		_, queued := p.behind[k]
		return queued || waiting[k] || x.running[k].stopping || x.shouldStop(k)
	})
	for _, t := range slices.Clone(st.Trials) {
		if len(heads) == 0 {
			return
		}
		if x.running[t.Key] != nil || t.Stop {
			continue
		}
		head := x.running[heads[0]]
		heads = heads[1:]
		ht := st.Trials[x.find(head.key)]
		x.launchAfter(ctx, t.Key, head.nodes, head.queue, RunRef(ht.Input, head.run))
		p.behind[t.Key] = head.key
		q := &st.Trials[x.find(t.Key)]
		q.Progress.State, q.Progress.Nodes = TrialPending, nil
	}
}
