// Package dataset reads the reference measurements that Gleaner is tested
// and benchmarked against: the throughput-versus-nodes curves of
// ../shared/data/scaling (derived from the Sia/Pollux artifact traces).
//
// It is pure: it parses readers and files, and imports no Temporal.
package dataset
