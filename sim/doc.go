// Package sim is Gleaner's discrete-event simulator: it replays real
// supercomputer logs (idle-node events, ReadIdleEvents; SWF job logs,
// ReadSWF) or synthetic churn with training workloads (ReadJobs, or drawn
// from measured scaling curves: SyntheticJobs, GavelJobs) through the
// same allocator as production, in simulated time, and measures what
// each policy turns idle node-hours into (Run, Result).
//
// A job's throughput curve comes from the oracle (its true curve), from
// the JPA learning it online from simulated progress reports as
// production's pool does (NewJPA), or type-blind (TypeBlind); nodes can
// be of several types (AssignNodeTypes, Gavel's GPU ratios).
//
// It is deterministic for a seed: no Temporal, no global random source,
// and no wall clock in any decision (Config.Clock only times the solver
// for the report). Plots of a result are in sim/simplot.
package sim
