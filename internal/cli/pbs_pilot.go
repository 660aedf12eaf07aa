package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/cluster/pbs"
)

// newPBSPilotCmd is what a PBS pilot job runs: qsub's
// `-- /path/to/gleaner pbs-pilot AGENT-FLAGS...`, with no shell in
// between. It is `gleaner agent` with the vnode PBS gave the job as its
// one node.
func newPBSPilotCmd() *cobra.Command {
	cmd, o := newPilotCmdFor(pbsPilotNode, pbs.PilotCommand+" [agent flags]",
		"Run a PBS pilot's agent (started by pilot jobs; see docs/pbs.md)",
		`Started by a Gleaner pilot job, never by hand: qsub runs
"gleaner pbs-pilot" with the flags of gleaner agent. It joins the pool with
one node, named as PBS names the vnode the job runs on (its exec_vnode, read
with qstat), and leaves at the SIGTERM PBS sends when it preempts or deletes
the pilot or its walltime runs out — or when qstat says PBS is requeueing or
ending the job, which it does without a SIGTERM to a job it ends as it starts.`)
	o.watch = pbsPilotWatch
	return cmd
}

// pbsPilotWatch watches the pilot's own job (pbs.WatchPilot): PBS loses
// the SIGTERM of a job it requeues or deletes as the job starts, and
// SIGKILLs it kill_delay later.
func pbsPilotWatch(ctx context.Context, getenv func(string) string, job string) (context.Context, context.CancelFunc) {
	return pbs.WatchPilot(ctx, pbs.ExecRunner{Bin: getenv(pbs.EnvBin), Timeout: 10 * time.Second}, job, pbs.DefaultPilotWatch)
}

// pbsPilotNode is a PBS pilot's one node, the first vnode of its job's
// exec_vnode, and its job: qstat from GLEANER_PBS_BIN, else PATH.
func pbsPilotNode(getenv func(string) string) (node, job string, err error) {
	job = getenv("PBS_JOBID")
	if job == "" {
		return "", "", fmt.Errorf("PBS_JOBID is not set: %s runs inside a PBS pilot job only", pbs.PilotCommand)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node, err = pbs.PilotNode(ctx, pbs.ExecRunner{Bin: getenv(pbs.EnvBin)}, job)
	if err != nil {
		return "", "", fmt.Errorf("the vnode of PBS job %s: %w", job, err)
	}
	return node, job, nil
}
