// Package benchrun runs Gleaner's Temporal benchmarks end to end in a dev
// environment built by internal/devenv: a real dev server on free ports
// with a temporary database, an in-process worker and the go-mlp example
// trainer built once. RunCampaign measures campaign throughput and history sizes;
// RunRescale measures how long a trial takes to relaunch after its pool
// changes its assignment (on one host, or on two agents); RunAgents
// measures a pool of many agents (joins, signals, history per hour).
// `gleaner bench campaign`, `bench rescale` and `bench agents` print their
// reports; docs/benchmarks.md has the numbers.
package benchrun
