// Package trial is the Go side of Gleaner's trial protocol: the contract
// between Gleaner and training code (docs/protocol.md). Launchers use its
// environment names and report decoding; Go trainers use Env, Reporter and
// Stopping to read their assignment, report progress and checkpoint on
// SIGTERM. python/gleaner_trial.py is the same contract for Python.
//
// It is pure apart from the trainer-side helpers' file and signal use, and
// imports no Temporal.
package trial
