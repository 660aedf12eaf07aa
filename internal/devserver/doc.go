// Package devserver runs a real Temporal dev server (`temporal server
// start-dev` from the pinned `temporal` CLI) for tests and the demo: on
// free ports, with Gleaner's search attributes registered, optionally on a
// persistent SQLite file so that it can be stopped and restarted on the
// same database and port.
//
// It never downloads a server: the CLI is found through TEMPORAL_CLI, PATH
// or $(go env GOPATH)/bin and is installed by `make temporal`. Tests start
// one with testenv.DevServer, which skips when the CLI is absent unless
// GLEANER_REQUIRE_TEMPORAL=1 (as in CI), where it fails instead.
//
// The gleaner binary imports it (`gleaner dev`, the benchmarks), so it must
// not import testing; nor the workflows or activities packages.
package devserver
