package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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
	// Prefix is LocalHost.Prefix.
	Prefix string
	// Whole is LocalHost.Whole (needs Slots 1 and a Prefix).
	Whole bool
}

// LocalHost is this host's slots, resolved from a LocalConfig: slot i
// (node id SlotID(i)) owns GPUs[i] when the host has GPUs.
type LocalHost struct {
	Slots int
	GPUs  []GPU // empty on a host without GPUs; else len(GPUs) == Slots
	// Prefix, when set, makes slot i's node id "Prefix/i" (an agent's
	// nodes, unique across a pool) instead of SlotID(i), and scopes the
	// launcher's leftover sweep to the runs it started under that prefix:
	// agents sharing one machine (tests, network namespaces) never kill
	// each other's ranks.
	Prefix string
	// Whole makes the host one node whose id is Prefix itself: a batch
	// scheduler's node that a pilot job holds (the Slurm node name).
	Whole bool
}

// NodeID is the node id of slot i.
func (h LocalHost) NodeID(i int) string {
	if h.Prefix == "" {
		return SlotID(i)
	}
	if h.Whole {
		return h.Prefix
	}
	return h.Prefix + "/" + strconv.Itoa(i)
}

// ParseNodeID returns the slot index of one of this host's node ids.
func (h LocalHost) ParseNodeID(id string) (int, error) {
	if h.Prefix == "" {
		return ParseSlotID(id)
	}
	if h.Whole {
		if id != h.Prefix {
			return 0, fmt.Errorf("node %q is not this host's node (%s)", id, h.Prefix)
		}
		return 0, nil
	}
	digits, ok := strings.CutPrefix(id, h.Prefix+"/")
	i, err := strconv.Atoi(digits)
	if !ok || err != nil || i < 0 || (len(digits) > 1 && digits[0] == '0') || digits[0] == '+' {
		return 0, fmt.Errorf("node %q is not a node of this host (%s, %s, ...)", id, h.NodeID(0), h.NodeID(1))
	}
	return i, nil
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
	if cfg.Whole && (slots != 1 || cfg.Prefix == "") {
		return LocalHost{}, fmt.Errorf("local host: a whole-host node needs one slot and a prefix (its id), not %d slots and prefix %q", slots, cfg.Prefix)
	}
	return LocalHost{Slots: slots, GPUs: append([]GPU(nil), gpus...), Prefix: cfg.Prefix, Whole: cfg.Whole}, nil
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
		nodes[i] = Node{ID: h.NodeID(i), Type: h.NodeType(i)}
	}
	return newStaticSource(nodes)
}
