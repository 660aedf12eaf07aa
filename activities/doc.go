// Package activities holds Gleaner's Temporal activities: thin adapters
// from the workflows onto the pure packages and the cluster. RunTrial
// launches a trainer and follows it; RegisterTrial starts or signals a
// pool; PollNodes asks a pool's node source for idle nodes; Allocate runs
// the JPA and the allocator over a pool snapshot.
//
// Activities are methods on Activities, which holds their dependencies.
// The interfaces of those it reaches through the cluster, Launcher and
// NodeSource, are defined here, narrowed to what the activities call;
// package cluster implements them.
package activities
