// Package cluster is where Gleaner meets machines: node sources say which
// nodes are idle now (static local slots, a replayed idle-node trace) and
// launchers start, watch and stop trainer processes on nodes (local
// processes; Slurm later). The interfaces they satisfy are defined where
// they are used (activities.Launcher, activities.NodeSource); only
// Process, the result type of a launch, is defined here.
//
//   - LocalLauncher runs each trial as a process group on this host, a
//     node being a slot ("local-0", ...) with one GPU where the host has
//     GPUs; it speaks the trial protocol of package trial. Every process
//     a trainer starts is stopped with it, through its group, a cgroup v2
//     of the run where one can be made, and a run token in the
//     environment (GLEANER_RUN_TOKEN) found by a scan of /proc.
//   - ReportTailer follows a trainer's report file from a byte offset, a
//     pull API the RunTrial activity drives from its heartbeat ticker.
//   - StaticSource offers fixed slots; ReplaySource makes slots come and
//     go as the nodes of a real idle-node trace did, time compressed.
//
// Node and ExitStatus are aliases of gleaner.Node and gleaner.ExitStatus:
// the plain data that crosses into workflows lives in the root package, so
// workflows and clients need not import this one.
//
// See docs/cluster.md. It imports gleaner (the root package), trial and
// data (the built-in traces a replay source may name); it must not import
// Temporal, workflows or activities.
package cluster
