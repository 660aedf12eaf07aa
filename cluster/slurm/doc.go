// Package slurm harvests a Slurm cluster's idle nodes with preemptible
// pilot jobs (docs/slurm.md): it is Slurm as a pilot.Scheduler, the
// policy being package cluster/pilot's.
//
// Gleaner never asks for SSH access to idle nodes: the pilots are
// single-node jobs in a preemptible partition (or QOS) with --time-min,
// so the backfill scheduler starts them in the holes batch jobs leave.
// Each pilot runs `gleaner agent`, which joins the pool with the Slurm
// node's name as its node id. When a batch job needs the node, Slurm
// preempts the pilot: SIGTERM at once, SIGKILL after the partition's
// GraceTime; the agent leaves the pool at the SIGTERM and its trainers
// checkpoint before the SIGKILL.
//
// NewScheduler checks the cluster at start (the partition exists and is
// preemptible, or under preempt/qos the pilots' QOS, read with sacctmgr;
// its GraceTime, MaxTime and node count; bf_interval; whether a preempted
// pilot hears its --signal at once, preempt_send_user_signal; whether the
// nodes are this machine; the gres) and writes the pilot script; NewPilots puts the pilot policy over it, its
// defaults following from what Slurm said (Scheduler.Limits). Scheduler
// submits with sbatch, lists the pool's pilots with squeue, cancels and
// signals them with scancel, and reads the plan — which nodes pending
// jobs (squeue --start) and reservations claim, and from when — as
// pilot.Claims; the policy estimates each pilot node's idle time from it
// (IdleUntil) and yields nodes about to be claimed.
//
// Slurm is driven through its commands, with argv and never a shell
// (Runner), and their machine-readable output formats; every parser
// returns a *ParseError naming the command, the line and the field.
//
// The package is pure of Temporal: it imports cluster/pilot, whose Pool
// interface the worker implements over the pool workflow.
package slurm
