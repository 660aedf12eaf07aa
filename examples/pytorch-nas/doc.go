// Package pytorchnas holds Gleaner's neural architecture search example
// trainer, train.py (NAS-Bench-201-style cell networks on scikit-learn's
// digits, data-parallel with PyTorch), its campaign (campaign.yaml), and
// the Go tests that run it as Gleaner would (nas_test.go). There is no Go
// code to import here.
package pytorchnas
