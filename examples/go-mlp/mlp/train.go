package mlp

import (
	"encoding/gob"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
)

// state is everything a checkpoint holds: with it a resumed run continues
// exactly where the checkpointed one was (same node count ⇒ bit-identical).
//
// Version 1 is the network of the hidden parameter (Arch empty): what
// go-mlp wrote before architectures, and still writes for that network,
// so checkpoints of either age load both ways. Version 2 is an
// architecture's network: Arch is its canonical JSON, Hidden 0.
type state struct {
	Version  int
	Step     int64 // optimiser steps taken since the trial first started
	Samples  int64 // training samples consumed since the trial first started
	Hidden   int
	Classes  int
	Arch     string // the architecture's canonical JSON (version 2)
	Weights  []float64
	Velocity []float64 // momentum buffer
	RNG      []byte    // the batch sampler's PCG state
}

const (
	stateVersionHidden = 1
	stateVersionArch   = 2
)

func (s *state) encode(w io.Writer) error { return gob.NewEncoder(w).Encode(s) }

func decodeState(r io.Reader) (*state, error) {
	var s state
	if err := gob.NewDecoder(r).Decode(&s); err != nil {
		return nil, err
	}
	switch {
	case s.Version != stateVersionHidden && s.Version != stateVersionArch:
		return nil, fmt.Errorf("checkpoint version %d, this trainer reads %d and %d", s.Version, stateVersionHidden, stateVersionArch)
	case (s.Version == stateVersionArch) != (s.Arch != ""):
		return nil, fmt.Errorf("checkpoint version %d with architecture %q: corrupt", s.Version, s.Arch)
	}
	return &s, nil
}

// nodeSpan is which of a run's data-parallel nodes this process computes:
// count of them, numbered first, first+1, … among total.
type nodeSpan struct{ total, first, count int }

// allNodes is a single-host run's span: every node, here.
func allNodes(n int) nodeSpan { return nodeSpan{total: n, count: n} }

// trainer runs data-parallel minibatch SGD with momentum: each step the
// global batch is cut into one shard per node, every worker (one per node
// of this process) sums its shard's gradient, and the sums are reduced in
// node order and averaged — an allreduce — so the update is the same for
// any node count up to floating-point association. On several hosts every
// process draws the same global batch and computes its nodes' shards, and
// step's reduce sums the processes' partial sums over the hosts.
type trainer struct {
	model    mlp
	train    dataset
	lr, mom  float64
	batch    int
	span     nodeSpan
	weights  []float64
	velocity []float64
	pcg      *rand.PCG
	rng      *rand.Rand

	grads   [][]float64 // per worker
	losses  []float64
	scratch []*scratch
	idx     []int
	sum     []float64 // gradient sum, loss sum, and one slot of the caller's: what reduce gets
}

func newTrainer(model mlp, train dataset, lr, mom float64, batch int, span nodeSpan, seed uint64) *trainer {
	if span.first == 0 && span.count == span.total {
		// All on one host: no node without a sample.
		span.total = max(1, min(span.total, batch))
		span.count = span.total
	}
	pcg := rand.NewPCG(seed, 0xba7c4)
	t := &trainer{
		model: model, train: train, lr: lr, mom: mom, batch: batch, span: span,
		pcg: pcg, rng: rand.New(pcg),
		velocity: make([]float64, model.size()),
		losses:   make([]float64, span.count),
		idx:      make([]int, batch),
		sum:      make([]float64, model.size()+2),
	}
	t.weights = model.init(rand.New(rand.NewPCG(seed, 0x1417)))
	for range span.count {
		t.grads = append(t.grads, make([]float64, model.size()))
		t.scratch = append(t.scratch, model.scratch())
	}
	return t
}

// restore loads a checkpoint's weights, momentum and sampler state.
func (t *trainer) restore(s *state) error {
	if s.Arch != t.model.arch {
		return fmt.Errorf("checkpoint is of %s; the params ask for %s: resume a trial with the network it started with",
			describeState(s), t.model.describe())
	}
	if s.Hidden != t.model.hidden || s.Classes != t.model.classes || len(s.Weights) != t.model.size() || len(s.Velocity) != t.model.size() {
		return fmt.Errorf("checkpoint is of a %d-hidden, %d-class network with %d weights; the params ask for %d hidden, %d classes (%d weights)",
			s.Hidden, s.Classes, len(s.Weights), t.model.hidden, t.model.classes, t.model.size())
	}
	if err := t.pcg.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("checkpoint sampler state: %w", err)
	}
	copy(t.weights, s.Weights)
	copy(t.velocity, s.Velocity)
	return nil
}

func (t *trainer) snapshot(step, samples int64) *state {
	rng, _ := t.pcg.MarshalBinary() // PCG never fails to marshal
	s := &state{
		Version: stateVersionHidden, Step: step, Samples: samples,
		Hidden: t.model.hidden, Classes: t.model.classes,
		Weights: append([]float64(nil), t.weights...), Velocity: append([]float64(nil), t.velocity...),
		RNG: rng,
	}
	if t.model.arch != "" {
		s.Version, s.Hidden, s.Arch = stateVersionArch, 0, t.model.arch
	}
	return s
}

// describeState says which network a checkpoint holds, as mlp.describe.
func describeState(s *state) string {
	if s.Arch == "" {
		return fmt.Sprintf("%d hidden", s.Hidden)
	}
	m, err := hyper{Arch: s.Arch}.network(dataDim, s.Classes)
	if err != nil {
		return "architecture " + s.Arch
	}
	return m.describe()
}

// step takes one SGD step and returns the batch's mean loss. reduce, when
// not nil, sums a vector over the hosts in place: this process's gradient
// sum, then its loss sum, then a last slot, zero here, that reduce may
// fill with a value of its own to sum along (the stop flag).
func (t *trainer) step(reduce func([]float64) error) (float64, error) {
	for k := range t.idx {
		t.idx[k] = t.rng.IntN(t.train.len())
	}
	var wg sync.WaitGroup
	for w := range t.span.count {
		node := t.span.first + w
		lo, hi := node*t.batch/t.span.total, (node+1)*t.batch/t.span.total
		wg.Add(1)
		go func() { // one worker per node: its shard's gradient sum
			defer wg.Done()
			g := t.grads[w]
			clear(g)
			var loss float64
			for _, k := range t.idx[lo:hi] {
				loss += t.model.accumulate(t.weights, g, t.train.x(k), t.train.y[k], t.scratch[w])
			}
			t.losses[w] = loss
		}()
	}
	wg.Wait()
	// Allreduce: sum in node order, then average over the global batch.
	n := t.model.size()
	sum := t.sum
	copy(sum[:n], t.grads[0])
	sum[n], sum[n+1] = t.losses[0], 0
	for w := 1; w < t.span.count; w++ {
		for i, v := range t.grads[w] {
			sum[i] += v
		}
		sum[n] += t.losses[w]
	}
	if reduce != nil {
		if err := reduce(sum); err != nil {
			return 0, err
		}
	}
	inv := 1 / float64(t.batch)
	for i := range t.weights {
		t.velocity[i] = t.mom*t.velocity[i] - t.lr*sum[i]*inv
		t.weights[i] += t.velocity[i]
	}
	return sum[n] * inv, nil
}
