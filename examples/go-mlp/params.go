package main

import (
	"fmt"
	"math"

	"github.com/gleaner-hpc/gleaner/trial"
)

// hyper are the trainer's parameters as the params file gives them. Absent
// members keep the defaults of defaultHyper; choice parameters may arrive
// as strings ("64"), which trial.Number accepts.
type hyper struct {
	LR       trial.Number `json:"lr"`
	Momentum trial.Number `json:"momentum"`
	Hidden   trial.Number `json:"hidden"`
	Batch    trial.Number `json:"batch"`
	// Steps is the run's length in optimiser steps; Epochs, when set,
	// overrides it with ceil(epochs × train size / batch). A campaign's
	// budget (GLEANER_BUDGET) overrides both.
	Steps  trial.Number `json:"steps"`
	Epochs trial.Number `json:"epochs"`
	Seed   trial.Number `json:"seed"`
	// ReportEvery and CheckpointEvery are in steps.
	ReportEvery     trial.Number `json:"report_every"`
	CheckpointEvery trial.Number `json:"checkpoint_every"`
	// StepMS sleeps after every step, so tests can make a run last a
	// chosen time.
	StepMS trial.Number `json:"step_ms"`

	// Test-only misbehaviour.
	FailAtStep     trial.Number `json:"fail_at_step"`    // exit 3 on reaching this step, first run only
	IgnoreSigterm  trial.Flag   `json:"ignore_sigterm"`  // never stop on SIGTERM
	IgnoreBudget   trial.Flag   `json:"ignore_budget"`   // train to steps or epochs whatever GLEANER_BUDGET says
	GarbageReports trial.Flag   `json:"garbage_reports"` // interleave malformed report lines
}

func defaultHyper() hyper {
	return hyper{
		LR: 0.1, Momentum: 0.9, Hidden: 32, Batch: 64, Steps: 500, Seed: 1,
		ReportEvery: 10, CheckpointEvery: 50,
	}
}

// validate checks the parameters; errors name the parameter.
func (h hyper) validate() error {
	isInt := func(n trial.Number) bool { return float64(n) == math.Trunc(float64(n)) }
	switch {
	case !(h.LR > 0) || math.IsInf(float64(h.LR), 0):
		return fmt.Errorf("lr: %v must be positive and finite", h.LR)
	case !(h.Momentum >= 0 && h.Momentum < 1):
		return fmt.Errorf("momentum: %v must be in [0, 1)", h.Momentum)
	case h.Hidden < 1 || h.Hidden > 4096 || !isInt(h.Hidden):
		return fmt.Errorf("hidden: %v must be an integer in [1, 4096]", h.Hidden)
	case h.Batch < 1 || h.Batch > 1<<16 || !isInt(h.Batch):
		return fmt.Errorf("batch: %v must be an integer in [1, 65536]", h.Batch)
	case h.Steps < 0 || h.Steps > 1e9 || !isInt(h.Steps):
		return fmt.Errorf("steps: %v must be an integer in [0, 1e9]", h.Steps)
	case h.Epochs < 0 || h.Epochs > 1e6:
		return fmt.Errorf("epochs: %v must be in [0, 1e6]", h.Epochs)
	case h.Seed < 0 || !isInt(h.Seed):
		return fmt.Errorf("seed: %v must be a non-negative integer", h.Seed)
	case h.ReportEvery < 1 || !isInt(h.ReportEvery):
		return fmt.Errorf("report_every: %v must be a positive integer", h.ReportEvery)
	case h.CheckpointEvery < 1 || !isInt(h.CheckpointEvery):
		return fmt.Errorf("checkpoint_every: %v must be a positive integer", h.CheckpointEvery)
	case h.StepMS < 0 || h.StepMS > 60_000:
		return fmt.Errorf("step_ms: %v must be in [0, 60000]", h.StepMS)
	case h.FailAtStep < 0 || !isInt(h.FailAtStep):
		return fmt.Errorf("fail_at_step: %v must be a non-negative integer", h.FailAtStep)
	}
	return nil
}

// budget returns the run's length in steps when the campaign gives no
// budget of its own.
func (h hyper) budget(trainSize int) int64 {
	if h.Epochs > 0 {
		return int64(math.Ceil(float64(h.Epochs) * float64(trainSize) / float64(h.Batch)))
	}
	return int64(h.Steps)
}
