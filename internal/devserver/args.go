package devserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strconv"
)

// The settings every dev server Gleaner starts runs with (`gleaner dev`,
// the benchmarks, the tests, and `make devserver`, whose recipe
// TestMakeDevserverHasTheSettings holds to them).

// tuning is the dynamic config that serves Gleaner's load: eager
// activities (a worker that schedules an activity on its own task queue
// gets it in the answer to its workflow task, up to 3 a task: no
// matching, no poll; inline trials start this way).
var tuning = []string{"system.enableActivityEagerExecution=true"}

// partitionsOne keeps each task queue in one partition, so that tasks go
// out in the order they were scheduled: a campaign's first wave reaches
// its nodes before the runs queued behind it (with Temporal's four, the
// first wave took twice as long; docs/benchmarks.md). Only reads of one
// partition serve that (with writes to one and reads of four, polls were
// forwarded one at a time and the first wave was slower still), and going
// from four to one strands the tasks queued in the other three: so a
// database gets it only from its start (onePartition).
var partitionsOne = []string{
	"matching.numTaskqueueReadPartitions=1",
	"matching.numTaskqueueWritePartitions=1",
}

// OnePartitionMark, beside a database file, says the database was created
// with one partition per task queue. `make devserver` follows it too.
const OnePartitionMark = ".one-partition"

// onePartition says whether a server of dbFile ("" in memory) keeps each
// task queue in one partition: a database in memory, or one this package
// (or `make devserver`) created, whose mark it writes now; not one
// created by a server that had four.
func onePartition(dbFile string) (bool, error) {
	if dbFile == "" {
		return true, nil
	}
	mark := dbFile + OnePartitionMark
	if _, err := os.Stat(mark); err == nil {
		return true, nil
	}
	if _, err := os.Stat(dbFile); !errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		return false, fmt.Errorf("devserver: %w", err)
	}
	return true, nil
}

// filePragmas are the SQLite pragmas of a server persisting to a file.
// SQLite's defaults (a rollback journal, synchronous=FULL) sync the disk
// twice a commit, and the server commits for every activity started and
// completed: on a 2-core machine those syncs cost a campaign of one-second
// inline trials a sixth of its throughput (docs/benchmarks.md). Written
// ahead with synchronous=NORMAL, a commit is an append to the log, synced
// at checkpoints; the database stays consistent and every commit survives
// the process's death (only a crash of the machine may lose the last).
var filePragmas = []string{"journal_mode=WAL", "synchronous=NORMAL"}

// args is the `temporal` command line.
func (s *Server) args() []string {
	o := s.opts
	args := []string{
		"server", "start-dev",
		"--ip", o.IP,
		"--port", strconv.Itoa(o.Port),
		"--namespace", o.Namespace,
		"--log-level", o.LogLevel,
		"--dynamic-config-value", "frontend.enableServerVersionCheck=false",
	}
	config := tuning
	if s.onePartition {
		config = slices.Concat(config, partitionsOne)
	}
	for _, kv := range slices.Concat(config, o.DynamicConfig) { // the caller's last: they win
		args = append(args, "--dynamic-config-value", kv)
	}
	if o.DBFile != "" {
		args = append(args, "--db-filename", o.DBFile)
		for _, p := range filePragmas {
			args = append(args, "--sqlite-pragma", p)
		}
	}
	if o.UI {
		args = append(args, "--ui-port", strconv.Itoa(o.UIPort))
	} else {
		args = append(args, "--headless")
	}
	names := make([]string, 0, len(s.attrs))
	for name := range s.attrs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		args = append(args, "--search-attribute", name+"="+s.opts.SearchAttributes[name])
	}
	return args
}
