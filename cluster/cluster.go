package cluster

import (
	"context"
	"time"
)

// Node is an idle node as a source reports it.
type Node struct {
	ID   string `json:"id"`
	Type string `json:"type,omitempty"`
	// IdleUntil is when the node is expected to be taken back; zero when
	// unknown.
	IdleUntil time.Time `json:"idle_until,omitzero"`
}

// NodeSource reports the nodes that are idle now.
type NodeSource interface {
	// Idle returns the idle nodes at now, sorted by id.
	Idle(ctx context.Context, now time.Time) ([]Node, error)
}

// LaunchSpec is everything a launcher needs to start one run of a trial.
type LaunchSpec struct {
	TrialID    string
	CampaignID string
	// Command is the argv, run without a shell.
	Command []string
	WorkDir string
	Env     map[string]string
	// Params is the JSON object written to GLEANER_PARAMS_FILE.
	Params []byte
	// Nodes are the node ids to run on (len ≥ 1).
	Nodes []string
	// CheckpointDir is stable for the trial across restarts.
	CheckpointDir string
	// ResumeFrom is the last completed checkpoint, empty at first start.
	ResumeFrom string
	// RunDir holds this run's params file, hostfile, report file and log.
	RunDir string
}

// Launcher starts trainer processes.
type Launcher interface {
	Launch(ctx context.Context, spec LaunchSpec) (Process, error)
}

// Process is one running trainer.
type Process interface {
	// ReportFile is the path the trainer appends report lines to.
	ReportFile() string
	// LogFile is where the trainer's stdout and stderr go.
	LogFile() string
	// Done is closed when the process has exited.
	Done() <-chan struct{}
	// Exit returns the exit status once Done is closed.
	Exit() ExitStatus
	// Stop asks the trainer to checkpoint and exit (SIGTERM to every
	// process it started), then kills it (SIGKILL) if it has not exited
	// after grace. It returns once the process has exited and what it
	// left has been killed.
	Stop(grace time.Duration) ExitStatus
}

// ExitStatus is how a process ended.
type ExitStatus struct {
	Code int // exit code; -1 when killed by a signal
	// Signal is the signal that killed it, if any ("killed", "terminated").
	Signal string
	// Killed is true when Stop had to escalate to SIGKILL.
	Killed bool
}

// OK reports a zero exit code.
func (e ExitStatus) OK() bool { return e.Code == 0 && e.Signal == "" }
