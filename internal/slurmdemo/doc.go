// Package slurmdemo is the live BFTrainer scenario on a real Slurm
// cluster (`gleaner slurm-demo`, `make slurm-demo`; docs/slurm-demo.md):
// a window of a real batch workload (an SWF log) is replayed into Slurm's
// batch partition, time-compressed and scaled to the cluster, each job a
// real process; Gleaner's pilots harvest the holes it leaves for an HPO
// campaign of real trainers; a monitor records, every second, what held
// each node (a batch job, a pilot with a trial, a pilot without one, or
// nothing) and the run ends with the measurements of issue 11: harvest,
// pilots preempted, trials lost or completed twice, training lost per
// preemption, the delay the pilots added to batch jobs (against a replay
// of the same window without Gleaner), pilot churn, and the simulator's
// prediction for the same idle events. `gleaner pbs-demo` runs the same
// on the one-machine OpenPBS of scripts/openpbs/cluster.sh.
//
// The package is layered so that the decisions and the bookkeeping are
// pure and tested with fakes:
//
//   - swf.go, plan.go: reading an SWF log and turning a window of it into
//     a replay plan (scaling, compression, time limits). Pure.
//   - scheduler.go: the seam with the batch scheduler (Submitter,
//     JobLister, Scheduler): Slurm's (cluster.go) and PBS's (pbs.go, which
//     translates PBS's jobs into the Slurm words the timeline speaks).
//   - replay.go: submitting a plan through a Submitter, on an injected
//     clock.
//   - timeline.go, metrics.go, audit.go, events.go: what the monitor saw,
//     the measurements, the audit of every trial's run reports, the idle
//     events, the queue gaps and the simulator's prediction. Pure (audit
//     reads files).
//   - monitor.go: sampling the jobs (a JobLister) and the pool every
//     interval.
//   - demo.go, live.go, cluster.go, procs.go, output.go: the live assembly
//     (the cluster scripts, the passes, a Temporal dev server, a
//     `gleaner worker` process, the campaign), its clean teardown, and the
//     result printed for people.
//
// The pure files must not import Temporal, the worker or the CLI; only
// live.go talks to Temporal (through package client and the dev server).
package slurmdemo
