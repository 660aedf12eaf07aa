// Package examples carries the example campaigns that the gleaner binary
// needs without a checkout: `gleaner dev` runs GoMLPCampaign with the Go
// example trainer built into the binary.
package examples

import _ "embed"

// GoMLPCampaign is examples/go-mlp/campaign.yaml, the demo's campaign; its
// command, bin/go-mlp, is GoMLPCommand.
//
//go:embed go-mlp/campaign.yaml
var GoMLPCampaign []byte

// GoMLPCommand is the Go example trainer as the examples' campaigns name it
// (built by `go build -o bin/go-mlp ./examples/go-mlp`).
const GoMLPCommand = "bin/go-mlp"
