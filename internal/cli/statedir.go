package cli

import (
	"fmt"
	"os"
	"path/filepath"
)

// Gleaner's per-user state directory and what lies in it by default. One
// place for all of it, whatever the working directory: `make devserver`,
// `make demo` and `gleaner dev` share the dev server's database, and a
// worker's run data never lands in a checkout.
const (
	// stateDevSubdir holds the dev server's database and log (`gleaner
	// dev`, `make devserver`).
	stateDevSubdir = "dev"
	// stateDataSubdir is the run data (checkpoints, run directories) of
	// `gleaner worker` and `gleaner dev` without --data-dir.
	stateDataSubdir = "data"
)

// stateDirHint is the state directory as the help and the docs name it.
const stateDirHint = "$XDG_STATE_HOME/gleaner, else ~/.local/state/gleaner"

// userStateDir is $XDG_STATE_HOME/gleaner, or $HOME/.local/state/gleaner
// when XDG_STATE_HOME is unset or relative (the XDG base directory spec
// says to ignore a relative one), as getenv (os.Getenv when nil) has
// them. The Makefile's GLEANER_STATE follows the same rule.
func userStateDir(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "gleaner"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", fmt.Errorf("$HOME is not set: no default for Gleaner's state directory (%s)", stateDirHint)
	}
	return filepath.Join(home, ".local", "state", "gleaner"), nil
}

// devStateDir is where the dev server keeps its database and log.
func devStateDir(getenv func(string) string) (string, error) {
	dir, err := userStateDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, stateDevSubdir), nil
}

// defaultDataDir is the run data directory a worker or `gleaner dev` uses
// without --data-dir (or GLEANER_DATA_DIR).
func defaultDataDir(getenv func(string) string) (string, error) {
	dir, err := userStateDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, stateDataSubdir), nil
}
