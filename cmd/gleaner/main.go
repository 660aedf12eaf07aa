// Command gleaner runs NAS and HPO campaigns on the nodes a supercomputer
// leaves idle, and benchmarks and evaluates its allocator and profiler.
package main

import "github.com/gleaner-hpc/gleaner/internal/cli"

func main() {
	cli.Execute()
}
