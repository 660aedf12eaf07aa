package cluster

import (
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/trial"
)

// Node is an idle node as a source reports it. It is defined in the root
// package, gleaner.Node, because workflows and clients carry it too; the
// alias keeps this package's code and its users' unchanged.
type Node = gleaner.Node

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
	// Nodes are the node ids to run on, this host's (len ≥ 1).
	Nodes []string
	// AllNodes are the run's nodes over every host, in rank order, for
	// GLEANER_NODES and the hostfile; empty means Nodes (one host).
	AllNodes []string
	// Rendezvous, when set, adds its variables (trial.Rendezvous.Vars).
	Rendezvous *trial.Rendezvous
	// SocketIfname, when set, is GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME
	// unless the trial's env or the launcher's own environment sets them.
	SocketIfname string
	// CheckpointDir is stable for the trial across restarts.
	CheckpointDir string
	// ResumeFrom is the last completed checkpoint, empty at first start.
	ResumeFrom string
	// Budget, when > 0, is GLEANER_BUDGET: the trainer checkpoints and
	// exits 0 once its BudgetUnit counter (trial.BudgetSamples,
	// BudgetSteps or BudgetEpochs, cumulative since the trial first
	// started) reaches it. 0: no budget, the trainer runs to its own end.
	Budget float64
	// BudgetUnit is GLEANER_BUDGET_UNIT; required with a Budget.
	BudgetUnit string
	// RunDir holds this run's params file, hostfile, report file and log.
	RunDir string
	// Swept: the caller has just killed what earlier launches of the
	// trial left (KillLeftovers), or knows there are none (the trial's
	// checkpoint directory did not exist: every launch creates it first),
	// so Launch does not sweep again. A sweep reads every process's
	// environment: with many short trials it was a third of a worker's CPU.
	Swept bool
}

// Process is one running trainer, the result of a launch (LocalLauncher
// returns a *LocalProcess). Unlike the launcher and node source
// interfaces, defined where they are used (activities), it stays here: Go
// matches a method's result type exactly, so a launcher satisfies
// activities.Launcher only if both name this type, and this package must
// not import activities.
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

// ExitStatus is how a process ended (Code, Signal, Killed; OK reports a
// clean exit). It is defined in the root package, gleaner.ExitStatus,
// because the RunTrial result that workflows read carries it.
type ExitStatus = gleaner.ExitStatus
