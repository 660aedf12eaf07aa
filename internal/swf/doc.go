// Package swf reads job logs in the Standard Workload Format of the
// Parallel Workloads Archive
// (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): header
// comments ("; Key: value") and lines of 18 whitespace-separated numbers,
// -1 meaning unknown.
//
// It is the reading that the simulator (sim.ReadSWF) and the Slurm demo
// (slurmdemo.ReadSWF) share: lines and their bound, the MaxNodes and
// UnixStartTime headers, the field count, numbers, and errors that name
// the line and the field. What a job means, and which fields must be
// known or whole, stays with each caller.
//
// It is pure: it reads an io.Reader, does not log, and imports nothing
// from Gleaner.
package swf
