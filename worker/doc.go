// Package worker wires a Gleaner worker from its configuration (Config:
// the connection, client.Connection, and the worker's own data
// directory, node source, trainer allow-list and pool settings, from flags
// and environment):
//
//   - Build: the worker's Setup (this host's slots, its node source —
//     static, a replayed trace, none — the local launcher, the JPA's prior
//     curves, GPU ratios and throughput model) and the Components over it:
//     Gleaner's workflow functions and the activities of an
//     activities.Activities;
//   - Register and New: a Temporal worker with every set component
//     registered under its name (workflows/api.go); dialling Temporal is
//     client.Connection.Dial's;
//   - NewPilots: a batch scheduler's node source (Slurm): pilot jobs,
//     whose agents join the pool, looked after by package cluster/pilot
//     beside the worker; a scheduler is one case there and one kind in
//     ParseNodeSource.
//
// Workflows and activities never import it. The agent (package agent),
// the dev environment and the benchmarks assemble activities of their own
// for what a worker does not run (an agent's lease, an in-process run).
package worker
