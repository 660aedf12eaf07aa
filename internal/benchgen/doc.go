// Package benchgen builds seeded random allocation problems from real
// throughput curves (the repository's data/scaling), for
// `gleaner bench allocator` and the allocator's tests. Pure: no I/O, no
// Temporal, no global rand.
package benchgen
