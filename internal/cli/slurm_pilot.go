package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/cluster/slurm"
)

// newSlurmPilotCmd is what a Slurm pilot job runs: its batch script's #!
// line is `gleaner slurm-pilot`, so slurmd starts
// `gleaner slurm-pilot SCRIPT AGENT-FLAGS...` with no shell in between.
// It is `gleaner agent` with the node Slurm gave the job as its one node.
func newSlurmPilotCmd() *cobra.Command {
	cmd := newPilotCmd(slurmPilotNode, slurm.PilotCommand+" SCRIPT [agent flags]",
		"Run a Slurm pilot's agent (started by pilot jobs; see docs/slurm.md)",
		`Started by a Gleaner pilot job, never by hand: the pilot's batch script is
"#!/path/to/gleaner slurm-pilot", so slurmd runs this with the script's path
and the flags of gleaner agent. It joins the pool with one node, named as
Slurm names the node the job runs on (SLURMD_NODENAME), and leaves at the
SIGTERM Slurm sends when it preempts the pilot or its time runs out.`)
	cmd.Args = cobra.ExactArgs(1)
	return cmd
}

// newPilotCmd is `gleaner agent` for a batch scheduler's pilot job: hidden,
// its one node and job named by node, leaving at SIGTERM.
func newPilotCmd(node func(getenv func(string) string) (string, string, error), use, short, long string) *cobra.Command {
	cmd, _ := newPilotCmdFor(node, use, short, long)
	return cmd
}

// newPilotCmdFor is newPilotCmd with the options it binds.
func newPilotCmdFor(node func(getenv func(string) string) (string, string, error), use, short, long string) (*cobra.Command, *agentOptions) {
	o := &agentOptions{getenv: os.Getenv, pilot: node}
	cmd := newAgentCmdFor(o)
	cmd.Use, cmd.Short, cmd.Long, cmd.Example, cmd.Hidden = use, short, long, "", true
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return o.run(ctx, cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr())
	}
	return cmd, o
}

// slurmPilotNode is a Slurm pilot's one node, the Slurm node, and its job.
func slurmPilotNode(getenv func(string) string) (node, job string, err error) {
	node = getenv("SLURMD_NODENAME")
	if node == "" {
		return "", "", fmt.Errorf("SLURMD_NODENAME is not set: %s runs inside a Slurm pilot job only", slurm.PilotCommand)
	}
	return node, getenv("SLURM_JOB_ID"), nil
}
