package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Execute runs the CLI with the process's arguments and streams and exits
// with ExitCode of its error (docs/cli.md).
func Execute() {
	if err := Run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		os.Exit(ExitCode(err))
	}
}

// Run runs the CLI with the given arguments and streams; tests call it.
// Errors are printed to stderr and returned (but for errReported, whose
// command printed its own).
func Run(args []string, stdout, stderr io.Writer) error {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err != nil && !errors.Is(err, errReported) {
		fmt.Fprintf(stderr, "gleaner: %v\n", err)
	}
	return err
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "gleaner",
		Short:         "Run NAS and HPO campaigns on the idle nodes of a supercomputer",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	// --version (and -v) print the version line alone.
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().BoolP("version", "v", false, "print the version and the commit this binary was built from")
	root.SetOut(stdout)
	root.SetErr(stderr)

	bench := &cobra.Command{Use: "bench", Short: "Benchmark Gleaner's components"}
	bench.AddCommand(newBenchAllocatorCmd())
	bench.AddCommand(newBenchCampaignCmd())
	bench.AddCommand(newBenchRescaleCmd())
	bench.AddCommand(newBenchAgentsCmd())
	bench.AddCommand(newBenchSearchCmd())
	bench.AddCommand(newBenchSearchMultiCmd())
	root.AddCommand(bench)

	jpaCmd := &cobra.Command{Use: "jpa", Short: "The Job Profiling Advisor: learn throughput curves online"}
	jpaCmd.AddCommand(newJPAEvalCmd())
	root.AddCommand(jpaCmd)
	root.AddCommand(newWorkerCmd())
	root.AddCommand(newAgentCmd())
	root.AddCommand(newSlurmPilotCmd())
	root.AddCommand(newPBSPilotCmd())
	root.AddCommand(newDevCmd())
	root.AddCommand(newSetupCmd())
	root.AddCommand(newSubmitCmd())
	root.AddCommand(newStatusCmd())
	root.AddCommand(newListCmd())
	root.AddCommand(newLeaderboardCmd())
	root.AddCommand(newTrialsCmd())
	root.AddCommand(newSearchCmd())
	root.AddCommand(newControlCmds()...)
	root.AddCommand(newPoolCmd())
	root.AddCommand(newSimCmd())
	root.AddCommand(newSlurmDemoCmd())
	root.AddCommand(newPBSDemoCmd())
	root.AddCommand(newCodecServerCmd())
	root.AddCommand(newDashboardCmd())
	root.AddCommand(newTrainerCmd())
	root.AddCommand(newExampleTrainerCmd())
	return root
}
