package activities

import "github.com/gleaner-hpc/gleaner/cluster"

// The cluster's implementations have what the activities need. The
// optional interfaces are checked too: a drifted signature would not fail
// to compile elsewhere, it would silently stop RunTrial killing leftovers.
var (
	_ Launcher         = (*cluster.LocalLauncher)(nil)
	_ leftoverKiller   = (*cluster.LocalLauncher)(nil)
	_ leftoverReporter = (*cluster.LocalProcess)(nil)
	_ NodeSource       = (*cluster.StaticSource)(nil)
	_ NodeSource       = (*cluster.ReplaySource)(nil)
)
