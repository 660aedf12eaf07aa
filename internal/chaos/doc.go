// Package chaos is the fault test of the live production stack without
// Docker (deploy/stack/stack.sh, `make stack`): PostgreSQL, the Temporal
// server built from its Go module, a Gleaner worker and a Gleaner agent,
// each a real process. Stack drives the script on free ports; runs.go
// reads what the trainers left in their run directories (report lines,
// "done" markers) and measures, after the faults, the steps each resume
// trained again, the trials trained to their end twice, and how long
// training stood still around a fault.
//
// The test itself (TestChaos, `make chaos`) runs only when
// GLEANER_CHAOS_FAULTS is set. The package must not import the worker,
// agent or activities packages: it sees Gleaner as an operator does,
// through the stack's processes, the client package and the data
// directory.
package chaos
