// Package pytorch holds Gleaner's PyTorch example trainer, train.py, and
// the Go test that runs it as Gleaner would (pytorch_test.go). There is no
// Go code to import here.
package pytorch
