// Package dataset reads the reference measurements that Gleaner is tested
// and benchmarked against: the throughput-versus-nodes curves of the
// repository's data/scaling folder (derived from the Sia/Pollux artifact
// traces; built into every binary by package data), or any folder of files
// in the same format.
//
// It is pure: it parses readers and files, and imports no Temporal.
package dataset
