package pbs

import (
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

// Settings configure a PBS pool's pilots. The zero value of each optional
// field is its documented default.
type Settings struct {
	// Pilots are the policy's settings (pool, counts, times, agent
	// arguments; pilot.Settings). Where their defaults follow from the
	// cluster: MaxPilots is the number of vnodes a pilot could run on,
	// TimeLimit at most the queue's (or server's) resources_max.walltime,
	// Lead the queue's kill_delay (at least 30 s; PBS itself sends TERM
	// at the walltime, kill_delay before KILL, so Lead only bounds the
	// agent's stop timeout), Interval and Yield the scheduler_iteration
	// (at most a minute); Location is this Location.
	Pilots pilot.Settings
	// Queue is the preemptible execution queue pilots run in (required).
	Queue string
	// Account is qsub's -A (a project to charge), optional.
	Account string
	// Select is the pilot's chunk beyond its count, qsub's
	// -l select=1:Select ("ncpus=64:system=polaris"); GPUs add
	// ngpus=N. Default: the queue's default_chunk.
	Select string
	// Place is qsub's -l place= (default "excl": the vnode to the pilot
	// alone).
	Place string
	// QsubArgs are more qsub arguments, before the command (a site's
	// required resources: "-l", "filesystems=home:eagle").
	QsubArgs []string
	// Gleaner is the gleaner binary the pilots run (default: this
	// process's executable). It must be at the same path on the nodes.
	Gleaner string
	// Dir holds the pilots' output (-o DIR/); the nodes write it, so it
	// should be on a shared file system.
	Dir string
	// Bin is the folder of PBS's commands on the nodes, where a pilot finds
	// qstat to learn its vnode (default: the pilot's PATH, then
	// /opt/pbs/bin).
	Bin string
	// SchedConfig is the scheduler's sched_config, read for
	// preempt_order when `qmgr -c 'list sched'` does not give it (PBS
	// before OpenPBS 19; default $PBS_HOME/sched_priv/sched_config).
	SchedConfig string
	// Location is the time zone PBS's commands print times in (default
	// time.Local).
	Location *time.Location
}
