package main

import (
	"encoding/gob"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
)

// state is everything a checkpoint holds: with it a resumed run continues
// exactly where the checkpointed one was (same node count ⇒ bit-identical).
type state struct {
	Version  int
	Step     int64 // optimiser steps taken since the trial first started
	Samples  int64 // training samples consumed since the trial first started
	Hidden   int
	Classes  int
	Weights  []float64
	Velocity []float64 // momentum buffer
	RNG      []byte    // the batch sampler's PCG state
}

const stateVersion = 1

func (s *state) encode(w io.Writer) error { return gob.NewEncoder(w).Encode(s) }

func decodeState(r io.Reader) (*state, error) {
	var s state
	if err := gob.NewDecoder(r).Decode(&s); err != nil {
		return nil, err
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("checkpoint version %d, this trainer reads %d", s.Version, stateVersion)
	}
	return &s, nil
}

// trainer runs data-parallel minibatch SGD with momentum: each step the
// global batch is cut into one shard per worker (one per node), every
// worker sums its shard's gradient, and the sums are reduced in rank order
// and averaged — an allreduce — so the update is the same for any node
// count up to floating-point association.
type trainer struct {
	model    mlp
	train    dataset
	lr, mom  float64
	batch    int
	workers  int
	weights  []float64
	velocity []float64
	pcg      *rand.PCG
	rng      *rand.Rand

	grads   [][]float64 // per worker
	losses  []float64
	scratch []*scratch
	idx     []int
}

func newTrainer(model mlp, train dataset, lr, mom float64, batch, workers int, seed uint64) *trainer {
	workers = max(1, min(workers, batch))
	pcg := rand.NewPCG(seed, 0xba7c4)
	t := &trainer{
		model: model, train: train, lr: lr, mom: mom, batch: batch, workers: workers,
		pcg: pcg, rng: rand.New(pcg),
		velocity: make([]float64, model.size()),
		losses:   make([]float64, workers),
		idx:      make([]int, batch),
	}
	t.weights = model.init(rand.New(rand.NewPCG(seed, 0x1417)))
	for range workers {
		t.grads = append(t.grads, make([]float64, model.size()))
		t.scratch = append(t.scratch, model.scratch())
	}
	return t
}

// restore loads a checkpoint's weights, momentum and sampler state.
func (t *trainer) restore(s *state) error {
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
	return &state{
		Version: stateVersion, Step: step, Samples: samples,
		Hidden: t.model.hidden, Classes: t.model.classes,
		Weights: append([]float64(nil), t.weights...), Velocity: append([]float64(nil), t.velocity...),
		RNG: rng,
	}
}

// step takes one SGD step and returns the batch's mean loss.
func (t *trainer) step() float64 {
	for k := range t.idx {
		t.idx[k] = t.rng.IntN(t.train.len())
	}
	var wg sync.WaitGroup
	for r := range t.workers {
		lo, hi := r*t.batch/t.workers, (r+1)*t.batch/t.workers
		wg.Add(1)
		go func() { // one worker per node: its shard's gradient sum
			defer wg.Done()
			g := t.grads[r]
			clear(g)
			var loss float64
			for _, k := range t.idx[lo:hi] {
				loss += t.model.accumulate(t.weights, g, t.train.x(k), t.train.y[k], t.scratch[r])
			}
			t.losses[r] = loss
		}()
	}
	wg.Wait()
	// Allreduce: sum in rank order, then average over the global batch.
	sum := t.grads[0]
	loss := t.losses[0]
	for r := 1; r < t.workers; r++ {
		for i, v := range t.grads[r] {
			sum[i] += v
		}
		loss += t.losses[r]
	}
	inv := 1 / float64(t.batch)
	for i := range t.weights {
		t.velocity[i] = t.mom*t.velocity[i] - t.lr*sum[i]*inv
		t.weights[i] += t.velocity[i]
	}
	return loss * inv
}
