// Package gleaner holds Gleaner's public types: the campaign spec that the
// CLI and Go programs submit, and the plain data that crosses between
// workflows, activities and clients (Node, ExitStatus), so that none of
// them imports another's implementation for a struct; and what a client
// reads of a running campaign: the names of Gleaner's workflows, queries
// and search attributes (ids.go) and the status, result, leaderboard,
// trial and pool views (CampaignStatus, TrialStatus, PoolStatus, …), which
// package workflows re-declares. The client API is package client.
//
// A campaign is one NAS or HPO study: a search space and algorithm, an
// objective metric, a budget, a trial command and its resource bounds, and
// the pool of idle nodes it runs on. Of Gleaner's packages it imports only
// hpo and nas (pure) and its spec decoder (internal/specdecode); it must
// not import Temporal, cluster, workflows, activities, worker, jpa or the
// allocator, which build on it.
//
// # Package map
//
// Gleaner's packages fall into four groups (README.md, "What is here",
// says what each does):
//
//   - Public surface, what a program that submits campaigns or a trainer
//     imports, cgo-free: gleaner, client, hpo, trial (and python/), codec,
//     internal/sdklog.
//   - Pure core, decisions and models without I/O or Temporal: hpo, nas,
//     allocator, curve, jpa, sim and sim/simplot, internal/specdecode,
//     internal/searchproto, internal/stats, internal/idleevents,
//     internal/swf, data, internal/dataset, internal/benchgen.
//   - Temporal layer, durable and deterministic: workflows, activities,
//     worker.
//   - Adapters to the world outside: cluster (node sources, the local
//     launcher), cluster/slurm, agent, internal/nethosts.
//
// Programs, tools and tests build on them: cmd/gleaner and internal/cli;
// internal/devserver, internal/devenv, internal/testenv;
// internal/integration, internal/chaos, internal/uitest; internal/benchrun
// and internal/searchbench (with gencurves and gennas);
// internal/slurmdemo; examples and the example trainers under it.
package gleaner
