// Package cluster is where Gleaner meets machines: node sources say which
// nodes are idle now (static local slots, a replayed idle-node trace) and
// launchers start, watch and stop trainer processes on nodes (local
// processes; Slurm later). Narrow interfaces, defined here where the
// activities use them.
//
// It must not import Temporal.
package cluster
