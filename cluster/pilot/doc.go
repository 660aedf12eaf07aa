// Package pilot keeps a pool supplied with a batch scheduler's idle nodes
// through pilot jobs: the policy, once, for every scheduler.
//
// Gleaner never asks for SSH access to idle nodes. It submits single-node
// pilot jobs that the scheduler may take back at any time (a preemptible
// partition, queue or QOS) and starts in the holes its batch jobs leave;
// each pilot runs `gleaner agent`, which joins the pool with the
// scheduler's name for its node. Pilots decides, every Interval, from the
// pool's Demand and the scheduler's answers:
//
//   - submit: while trials want nodes, up to MaxPending pilots wait in the
//     queue (never more than the trials want, a running pilot whose agent
//     has not joined the pool yet counting as a node on its way, nor
//     MaxPilots in all);
//   - cancel: waiting pilots nobody wants (the newest first), every
//     waiting pilot when no trial is registered, and the running ones
//     IdleRelease after the last trial left;
//   - estimate: when each running pilot's node is taken back (IdleUntil:
//     the pilot's own end, a queued job planned on the node, a
//     reservation), sent to the pool when it changes; the allocator
//     chooses the nodes a shrinking trial keeps by it;
//   - yield: a running pilot whose node the plan gives to a queued job or
//     a reservation within Yield gets SIGTERM now, as at a preemption, so
//     the job does not wait for the scheduler to preempt it; once each;
//   - shut down: every pilot of the pool is cancelled when Run ends, in a
//     context of its own (the one that ended Run is done), by name, tried
//     again while the scheduler fails, and what is still listed by id.
//
// At New, the address the agents connect to (Settings.Server) must be one
// the compute nodes reach: not loopback, unless the nodes are this machine
// (CheckServer, Limits.NodesHere).
//
// # Adding a scheduler
//
// A batch scheduler is one package implementing Scheduler (cluster/slurm
// is the first) and one case in the worker's node-source parsing
// (worker.ParseNodeSource, worker.NewPilots). The package:
//
//   - checks the site at start (the partition or queue exists and is
//     preemptible, its grace between TERM and KILL, the settings a
//     preempted pilot needs to hear TERM at once), says what it found as
//     Limits (NodesHere too), and refuses with the scheduler's own error
//     text, naming the setting;
//   - Submit: one pilot of Request's size (Nodes, Time, TimeMin, the
//     TERM Lead before the time limit, GPUs mapped to the scheduler's
//     resource syntax), named so that Pilots and CancelAll find the
//     pool's pilots and nobody else's, running `gleaner agent` with
//     Request.Agent on the node and Request.Env in its environment
//     (never on a command line);
//   - Pilots: the pool's pilot jobs, each with its state mapped to
//     Pending, Running or Other, its nodes and its end;
//   - Cancel and CancelAll: end pilots (the agent hears TERM, then the
//     scheduler's KILL);
//   - Signal: a signal to a pilot's agent alone (the batch script, not
//     the whole job), as the scheduler sends at a preemption;
//   - Plan: which nodes queued batch jobs and reservations claim, and from
//     when, leaving out pilots (they claim nothing);
//   - then calls New with its Limits; the worker runs Pilots.Run.
//
// Times in a Scheduler's answers are absolute instants; the scheduler
// parses them in its controller's time zone. Errors name the command and
// carry the scheduler's own message; Pilots wraps them with what it was
// doing.
//
// The package is pure of Temporal and of every scheduler: it must not
// import Temporal, workflows, activities, os/exec or a scheduler's
// package. What it needs of the pool is the Pool interface, which the
// worker implements over the pool workflow. Its only side effects are the
// Scheduler's and the Pool's calls and the logf it is given.
package pilot
