// Package devenv assembles a local Gleaner environment, once, for the three
// places that run one: `gleaner dev` (internal/cli), the benchmarks
// (internal/benchrun) and the end-to-end tests (internal/testenv).
//
// An environment is three pieces, each a step of its own so that a caller
// can report between them or share one across tests:
//
//   - the Temporal dev server: internal/devserver (devserver.Start);
//   - an in-process worker on it with what `gleaner worker` runs
//     (worker.Build, worker.New): StartWorker, configured from
//     WorkerConfig or from flags;
//   - the Go example trainer, examples/go-mlp: BuildTrainer.
//
// It must not import testing (the gleaner binary imports it through `gleaner
// dev`), nor its callers: internal/cli, internal/benchrun, internal/testenv.
package devenv
