// Package worker wires a Gleaner worker: its configuration (server
// address, namespace, TLS / mTLS / API key, task queue, data directory,
// node source — from flags and environment), the Temporal client (Dial),
// and a Temporal worker that registers Gleaner's workflows and activities
// under the names in workflows/api.go (New).
//
// It is the only package besides cmd that puts workflows and activities
// together; they never import it.
package worker
