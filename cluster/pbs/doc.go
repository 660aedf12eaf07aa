// Package pbs harvests a PBS Professional or OpenPBS cluster's idle nodes
// with preemptible pilot jobs (docs/pbs.md): it is PBS as a
// pilot.Scheduler, the policy being package cluster/pilot's.
//
// The pilots are single-chunk jobs in a preemptible queue (a queue whose
// jobs batch jobs preempt: preempt_prio, preempt_queue_prio, soft
// limits), shrink-to-fit (min_walltime, max_walltime) so the scheduler
// starts them in the holes its plan leaves. Each runs `gleaner pbs-pilot`,
// which joins the pool with the PBS vnode as its node id. When a batch job
// needs the vnode, PBS preempts the pilot by the scheduler's
// preempt_order: requeue (R) or delete (D) send SIGTERM, then SIGKILL
// after the queue's kill_delay; the agent leaves the pool at the SIGTERM
// and its trainers checkpoint before the SIGKILL. A job PBS ends as it
// starts gets no SIGTERM (the mom sends it before the job's process
// exists), so the pilot also watches its own job with qstat (WatchPilot). Suspend (S) would leave
// the trainer frozen on the node, so a preempt_order with S is refused.
//
// NewScheduler checks the site at start (the queue exists, is an enabled
// and started execution queue below preempt_queue_prio; preempt_order;
// kill_delay; the vnodes a pilot could run on; scheduler_iteration);
// NewPilots puts the pilot policy over it, its defaults following from
// what PBS said (Scheduler.Limits). Scheduler submits with qsub, lists the
// pool's pilots and reads the plan (queued jobs' estimated.start_time and
// estimated.exec_vnode) with `qstat -f -F json`, the reservations with
// `pbs_rstat -f`, cancels with qdel and signals with `qsig -s`.
//
// PBS is driven through its commands, with argv and never a shell
// (Runner). The parsers are pure functions over the commands' output;
// each returns a *ParseError naming the command and where in its output.
//
// The package is pure of Temporal: it imports cluster/pilot, whose Pool
// interface the worker implements over the pool workflow.
package pbs
