package activities

import (
	"context"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster"
)

// What the activities need of the machines, narrowed to what they call.
// Package cluster implements them (cluster_test.go checks that it does);
// its LaunchSpec, Process, Node and ExitStatus are the data and results
// these interfaces pass.

// Launcher starts trainers (cluster.LocalLauncher).
type Launcher interface {
	// Launch starts one run of a trial as spec describes and returns once
	// it has started; ctx bounds the launch, not the process.
	Launch(ctx context.Context, spec cluster.LaunchSpec) (cluster.Process, error)
}

// leftoverKiller is a launcher that can kill what earlier runs of a trial
// left running (cluster.LocalLauncher). RunTrial calls it, where the
// launcher has it, before it reads the checkpoint directory.
type leftoverKiller interface {
	KillLeftovers(checkpointDir string) ([]int, error)
}

// leftoverReporter is a process that lists what its launch killed of
// earlier runs of the trial (cluster.LocalProcess); RunTrial logs them.
type leftoverReporter interface {
	LeftoversKilled() []int
}

// NodeSource reports the nodes of a pool that are idle now
// (cluster.StaticSource, cluster.ReplaySource).
type NodeSource interface {
	// Idle returns the idle nodes at now, sorted by id.
	Idle(ctx context.Context, now time.Time) ([]cluster.Node, error)
}
