// Command go-mlp is Gleaner's example Go trainer: a small multilayer
// perceptron on 2-D spirals that speaks the trial protocol
// (docs/protocol.md). The trainer itself is package mlp, which the gleaner
// binary also carries for `gleaner dev`.
//
//	go build -o bin/go-mlp ./examples/go-mlp
package main

import (
	"os"

	"github.com/gleaner-hpc/gleaner/examples/go-mlp/mlp"
)

func main() { os.Exit(mlp.Main(os.Stderr)) }
