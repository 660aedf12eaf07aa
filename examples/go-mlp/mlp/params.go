package mlp

import (
	"errors"
	"fmt"
	"math"

	"github.com/gleaner-hpc/gleaner/nas"
	"github.com/gleaner-hpc/gleaner/trial"
)

// hyper are the trainer's parameters as the params file gives them. Absent
// members keep the defaults of defaultHyper; choice parameters may arrive
// as strings ("64"), which trial.Number accepts.
type hyper struct {
	LR       trial.Number `json:"lr"`
	Momentum trial.Number `json:"momentum"`
	Hidden   trial.Number `json:"hidden"`
	// Arch, when set, is an architecture of package nas's layer space, kind
	// mlp (docs/nas.md), as the JSON string the params file holds: the
	// network trained instead of Hidden's one tanh layer.
	Arch  string       `json:"arch"`
	Batch trial.Number `json:"batch"`
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
	_, err := h.network(dataDim, classes)
	return err
}

// maxWeights bounds an architecture's size: its gradient must fit an
// all-reduce frame (maxFrame), and every worker holds a copy.
const maxWeights = 1 << 22

// network returns the network the parameters ask for: Arch's when set,
// else one tanh layer of Hidden units. Errors name the field of arch
// ("arch: layers.layers[1].activation: …").
func (h hyper) network(in, classes int) (mlp, error) {
	if h.Arch == "" {
		return mlp{in: in, hidden: h.Hidden.Int(), classes: classes}, nil
	}
	a, err := nas.Parse(h.Arch)
	if err != nil {
		return mlp{}, fmt.Errorf("arch: %w", err)
	}
	if a.Layers == nil {
		return mlp{}, errors.New(`arch: a cell architecture; go-mlp builds a layer stack of kind mlp ({"layers":{"kind":"mlp",…}})`)
	}
	if err := a.Layers.Validate(); err != nil {
		return mlp{}, fmt.Errorf("arch: %w", err)
	}
	if a.Layers.Kind != "mlp" {
		return mlp{}, fmt.Errorf("arch: layers.kind: %q: go-mlp builds mlp layer stacks only", a.Layers.Kind)
	}
	// Canonical: skip cleared on the first layer and where the width
	// changes, so two spellings of one network are one checkpoint shape.
	canon := a.Layers.Canonical()
	m := mlp{in: in, classes: classes, arch: nas.Architecture{Layers: &canon}.JSON()}
	weights, fanIn := int64(0), int64(in)
	for i, y := range canon.Layers {
		act, err := parseActivation(y.Activation)
		if err != nil {
			return mlp{}, fmt.Errorf("arch: layers.layers[%d].activation: %w", i, err)
		}
		m.layers = append(m.layers, layer{width: y.Width, act: act, skip: y.Skip})
		weights += int64(y.Width)*fanIn + int64(y.Width)
		fanIn = int64(y.Width)
	}
	if weights += int64(classes)*fanIn + int64(classes); weights > maxWeights {
		return mlp{}, fmt.Errorf("arch: %s has %d weights, more than the %d go-mlp trains", canon, weights, maxWeights)
	}
	return m, nil
}

// budget returns the run's length in steps when the campaign gives no
// budget of its own.
func (h hyper) budget(trainSize int) int64 {
	if h.Epochs > 0 {
		return int64(math.Ceil(float64(h.Epochs) * float64(trainSize) / float64(h.Batch)))
	}
	return int64(h.Steps)
}
