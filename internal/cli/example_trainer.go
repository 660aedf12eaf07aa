package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/examples/go-mlp/mlp"
)

// ExampleTrainerCommand is the hidden subcommand that runs the Go example
// trainer (examples/go-mlp) built into this binary: `gleaner dev` runs its
// example campaign with it, so that an installed gleaner needs neither a
// checkout nor a Go toolchain to train.
const ExampleTrainerCommand = "example-trainer"

// errReported is an exit status whose reason the command has printed.
var errReported = errors.New("reported")

func newExampleTrainerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   ExampleTrainerCommand,
		Short: "Run the Go example trainer (go-mlp) as one trial: the trial protocol's environment says which",
		Long: `Runs examples/go-mlp, built into this binary, as one trial of a campaign:
its parameters, report file, checkpoints and rendezvous come from the
GLEANER_* environment a worker or agent sets (docs/protocol.md). Exit
status as go-mlp's. Meant for campaign commands, not for people:

  command: [/path/to/gleaner, example-trainer]`,
		Hidden: true,
		// Arguments after the command are the campaign's; go-mlp takes
		// none and ignores them, as its own binary does.
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := mlp.Main(cmd.ErrOrStderr()); code != 0 {
				return withCode(code, errReported)
			}
			return nil
		},
	}
}
