package cluster

import (
	"context"
	"fmt"
)

// CPUNodeType is the node type of a slot without a GPU.
const CPUNodeType = "cpu"

// LocalConfig configures the slots of this host. The zero value detects
// GPUs with nvidia-smi and makes one slot per GPU.
type LocalConfig struct {
	// Slots is how many nodes this host offers. Zero means one per GPU;
	// a host without GPUs needs it set.
	Slots int
	// GPUs, when non-nil, is the host's GPU list and detection is skipped
	// (an empty non-nil list means a host without GPUs).
	GPUs []GPU
	// Detect lists the host's GPUs when GPUs is nil; nil means
	// DetectNvidiaGPUs.
	Detect GPUDetector
}

// LocalHost is this host's slots, resolved from a LocalConfig: slot i
// (node id SlotID(i)) owns GPUs[i] when the host has GPUs.
type LocalHost struct {
	Slots int
	GPUs  []GPU // empty on a host without GPUs; else len(GPUs) == Slots
}

// NewLocalHost resolves cfg, detecting GPUs if needed.
func NewLocalHost(ctx context.Context, cfg LocalConfig) (LocalHost, error) {
	gpus := cfg.GPUs
	if gpus == nil {
		detect := cfg.Detect
		if detect == nil {
			detect = DetectNvidiaGPUs
		}
		var err error
		if gpus, err = detect(ctx); err != nil {
			return LocalHost{}, fmt.Errorf("local host: %w", err)
		}
	}
	seen := make(map[int]bool, len(gpus))
	for _, g := range gpus {
		if g.Index < 0 || seen[g.Index] {
			return LocalHost{}, fmt.Errorf("local host: GPU index %d is negative or repeated", g.Index)
		}
		seen[g.Index] = true
	}
	slots := cfg.Slots
	switch {
	case slots < 0:
		return LocalHost{}, fmt.Errorf("local host: slots: %d: %w", slots, errNoSlots)
	case slots == 0 && len(gpus) == 0:
		return LocalHost{}, fmt.Errorf("local host: slots: no GPUs found, so the number of slots must be set")
	case slots == 0:
		slots = len(gpus)
	case len(gpus) > 0 && slots > len(gpus):
		return LocalHost{}, fmt.Errorf("local host: slots: %d slots but only %d GPUs (one GPU per slot)", slots, len(gpus))
	}
	if len(gpus) > slots {
		gpus = gpus[:slots]
	}
	return LocalHost{Slots: slots, GPUs: append([]GPU(nil), gpus...)}, nil
}

// NodeType is the type of slot i: its GPU's model name, or CPUNodeType.
func (h LocalHost) NodeType(i int) string {
	if i < len(h.GPUs) && h.GPUs[i].Name != "" {
		return h.GPUs[i].Name
	}
	if len(h.GPUs) > 0 {
		return "gpu"
	}
	return CPUNodeType
}

// StaticSource offers every slot of the host, always idle, each typed by
// NodeType.
func (h LocalHost) StaticSource() *StaticSource {
	nodes := make([]Node, h.Slots)
	for i := range nodes {
		nodes[i] = Node{ID: SlotID(i), Type: h.NodeType(i)}
	}
	return newStaticSource(nodes)
}
