// Package integration holds Gleaner's end-to-end tests: a real Temporal
// dev server (internal/devserver), real `gleaner worker` processes built
// from this checkout, real trainer processes. There is no code here
// outside _test.go files; the helpers are in helpers_test.go.
//
// The tests skip when no `temporal` CLI is found, unless
// GLEANER_REQUIRE_TEMPORAL=1 (CI), where they fail. They wait with
// deadlines on conditions (waitFor), never on bare sleeps.
package integration
