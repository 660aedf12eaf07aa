// Package worker wires a Gleaner worker: its configuration (the
// connection, client.Connection, and the worker's own data directory and
// node source — from flags and environment) and a Temporal worker that
// registers Gleaner's workflows and activities under the names in
// workflows/api.go (New). Dialling Temporal is client.Connection.Dial's.
//
// It is the only package besides cmd that puts workflows and activities
// together; they never import it.
package worker
