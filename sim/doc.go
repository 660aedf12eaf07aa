// Package sim is Gleaner's discrete-event simulator: it replays real
// supercomputer logs (idle-node events, SWF job logs) with training
// workloads through the same allocator (and, later, JPA) as production,
// in simulated time, and measures what each policy turns idle node-hours
// into. It is pure: no Temporal, no wall clock, no global random source.
package sim
