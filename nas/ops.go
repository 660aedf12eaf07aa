package nas

import (
	"fmt"
	"slices"
	"strings"
)

// Cell operations a trainer implements (docs/nas.md says how). Their order
// here is the order canonical forms compare them in, so it is part of every
// cell's hash: append new operations at the end, never reorder.
const (
	OpNone        = "none"         // no edge: contributes zeros
	OpSkipConnect = "skip_connect" // identity
	OpConv1x1     = "conv_1x1"     // ReLU → 1×1 conv → BN
	OpConv3x3     = "conv_3x3"     // ReLU → 3×3 conv (padding 1) → BN
	OpAvgPool3x3  = "avg_pool_3x3" // 3×3 average pool, stride 1, padding 1, padding not counted
	OpMaxPool3x3  = "max_pool_3x3" // 3×3 max pool, stride 1, padding 1
)

var (
	cellOps  = []string{OpNone, OpSkipConnect, OpConv1x1, OpConv3x3, OpAvgPool3x3, OpMaxPool3x3}
	nb201Ops = []string{OpNone, OpSkipConnect, OpConv1x1, OpConv3x3, OpAvgPool3x3}
)

// CellOps lists every cell operation, in canonical order.
func CellOps() []string { return slices.Clone(cellOps) }

// NB201Ops lists NAS-Bench-201's five operations, a cell space's default.
func NB201Ops() []string { return slices.Clone(nb201Ops) }

// Layer kinds and activations a trainer implements.
const (
	KindMLP = "mlp" // dense layers on the flattened input
	KindCNN = "cnn" // 3×3 convolutions, then global average pooling
)

var (
	layerKinds  = []string{KindMLP, KindCNN}
	activations = []string{"relu", "tanh", "gelu", "sigmoid", "silu", "elu"}
)

// Activations lists the activations of a layer space, as PyTorch names
// them in lower case (torch.nn.ReLU, Tanh, GELU, Sigmoid, SiLU, ELU).
func Activations() []string { return slices.Clone(activations) }

// Bounds of a space's definition. Cells are canonicalised by trying every
// order of their intermediate nodes ((nodes−2)! of them), so nodes stay
// small.
const (
	MinNodes    = 2
	MaxNodes    = 7
	MaxStacks   = 6
	MaxCells    = 32
	MaxChannels = 4096
	MaxDepth    = 64
	MaxWidth    = 1 << 16
)

// opIndex returns op's canonical index in CellOps, or −1.
func opIndex(op string) int {
	for i, o := range cellOps {
		if o == op {
			return i
		}
	}
	return -1
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if x == y {
			return i
		}
	}
	return -1
}

// oneOf formats a list of allowed names for an error message.
func oneOf(xs []string) string { return strings.Join(xs, ", ") }

// checkNames checks that names is a list of distinct members of known;
// errors name field[i].
func checkNames(field string, names, known []string) error {
	for i, n := range names {
		if indexOf(known, n) < 0 {
			return fmt.Errorf("%s[%d]: %q is not one of %s", field, i, n, oneOf(known))
		}
		if j := indexOf(names[:i], n); j >= 0 {
			return fmt.Errorf("%s[%d]: %q is listed twice (also at [%d])", field, i, n, j)
		}
	}
	return nil
}

func checkRange(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s: %d must be in [%d, %d]", field, v, lo, hi)
	}
	return nil
}
