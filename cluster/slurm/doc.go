// Package slurm harvests a Slurm cluster's idle nodes with preemptible
// pilot jobs (docs/slurm.md).
//
// Gleaner never asks for SSH access to idle nodes: Pilots submits
// single-node pilot jobs to a preemptible partition (or QOS) with
// --time-min, so the backfill scheduler starts them in the holes batch
// jobs leave. Each pilot runs `gleaner agent`, which joins the pool with
// the Slurm node's name as its node id. When a batch job needs the node,
// Slurm preempts the pilot: SIGTERM at once, SIGKILL after the
// partition's GraceTime; the agent leaves the pool at the SIGTERM and its
// trainers checkpoint before the SIGKILL.
//
// Pilots also estimates how long each pilot's node stays idle (IdleUntil):
// the earliest of the pilot's own end time, the planned start of a pending
// job the backfill plan puts on the node (squeue --start), and the start
// of a reservation holding it. The pool's allocator uses it to choose the
// nodes a shrinking trial keeps and its look-ahead T_fwd.
//
// Slurm is driven through its commands, with argv and never a shell
// (Runner), and their machine-readable output formats; every parser
// returns a *ParseError naming the command, the line and the field.
//
// The package is pure of Temporal: what it needs of the pool (how many
// nodes its trials want; where to send estimates) is the Pool interface,
// which the worker implements over the pool workflow.
package slurm
