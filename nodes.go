package gleaner

import "time"

// Node is an idle node of a pool, as a node source reports it: the pool
// workflow keeps these in its state and hands them to the allocator.
//
// It is part of workflow histories (pool state, PollNodes results): its
// JSON shape must not change (fields may only be added, optional).
type Node struct {
	ID   string `json:"id"`
	Type string `json:"type,omitempty"`
	// IdleUntil is when the node is expected to be taken back; zero when
	// unknown.
	IdleUntil time.Time `json:"idle_until,omitzero"`
	// Host is the agent holding the node (empty: the worker's own, one
	// host). The allocator packs a trial's nodes onto few hosts.
	Host string `json:"host,omitempty"`
}

// ExitStatus is how a trainer process ended, as a launcher saw it and the
// RunTrial activity reports it.
//
// It is part of workflow histories (RunTrial results): its JSON shape,
// field names without tags, must not change.
type ExitStatus struct {
	Code int // exit code; -1 when killed by a signal
	// Signal is the signal that killed it, if any ("killed", "terminated").
	Signal string
	// Killed is true when Stop had to escalate to SIGKILL.
	Killed bool
}

// OK reports a zero exit code.
func (e ExitStatus) OK() bool { return e.Code == 0 && e.Signal == "" }
