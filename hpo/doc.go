// Package hpo holds hyperparameter search: typed search spaces, parameter
// values, and searchers behind the Searcher contract — pure, event-driven
// state machines that receive trial events and return actions, with a
// type-tagged JSON snapshot of their state (the shape of Determined's
// searcher, master/pkg/searcher). No I/O, no wall clock, no global random source:
// the campaign workflow carries the actions out deterministically.
//
// It must not import Temporal.
package hpo
