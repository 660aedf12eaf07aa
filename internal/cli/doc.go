// Package cli is the gleaner command line: one file per verb, each with
// options → validate → run, and streams injected so tests drive it like a
// user (see Run).
package cli
