// Package jpa is the Job Profiling Advisor: it turns the progress reports
// of running trials into per-trial throughput curves for the allocator.
//
// A Profiler ingests reports (cumulative samples over time), derives
// samples/s per interval, drops a warm-up after every (re)start, and keeps
// robust estimates per (trial, node count, node type) and the measured
// cost of each rescale. Predict completes a trial's curve over its node
// range from those sparse measurements and a Library of fully measured
// curves (profiled models, finished trials of the same campaign, node-type
// throughput ratios), with an uncertainty per count; Optimistic and
// AllocatorCurve turn the prediction into a curve.Curve (the allocator's
// Curve) that explores
// a bounded number of uncertain counts. Evaluate measures prediction error
// on real scaling curves. docs/jpa.md describes the model and its measured
// accuracy.
//
// The package is pure: no I/O beyond the readers it is handed, no clock,
// no logging, no global random source, no cgo. It imports the curve leaf,
// not the allocator (whose solver is cgo), and must not import Temporal
// (go.temporal.io/...), workflows or activities; the allocator must never
// import jpa.
package jpa
