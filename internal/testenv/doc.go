// Package testenv holds the setup that Gleaner's end-to-end tests share:
// the go-mlp example trainer built once per test process, an in-process
// worker on a Temporal dev server (internal/devserver) with CPU slots and
// a fast pool (both from internal/devenv, the builder `gleaner dev` and the
// benchmarks use too), and a small go-mlp campaign spec.
//
// It is imported only by tests (it imports testing); no production code
// depends on it.
package testenv
