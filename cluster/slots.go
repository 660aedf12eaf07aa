package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// SlotPrefix starts the id of every local slot: slot i is "local-i".
const SlotPrefix = "local-"

// SlotID is the node id of local slot i.
func SlotID(i int) string { return SlotPrefix + strconv.Itoa(i) }

// ParseSlotID returns the index of a local slot id ("local-3" → 3).
func ParseSlotID(id string) (int, error) {
	digits, ok := strings.CutPrefix(id, SlotPrefix)
	if !ok || digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, fmt.Errorf("node %q is not a local slot id (%s0, %s1, ...)", id, SlotPrefix, SlotPrefix)
	}
	i, err := strconv.Atoi(digits)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("node %q is not a local slot id (%s0, %s1, ...)", id, SlotPrefix, SlotPrefix)
	}
	return i, nil
}

// GPU is one accelerator of this host.
type GPU struct {
	// Index is the CUDA device index, the value put in CUDA_VISIBLE_DEVICES.
	Index int    `json:"index"`
	Name  string `json:"name,omitempty"` // model, e.g. "NVIDIA H100 80GB HBM3"
	UUID  string `json:"uuid,omitempty"`
}

// GPUDetector lists the GPUs of this host; none (and no error) on a host
// without GPUs. Injected where tests need a fake host.
type GPUDetector func(ctx context.Context) ([]GPU, error)

// NoGPUs is the detector of a host without GPUs.
func NoGPUs(context.Context) ([]GPU, error) { return nil, nil }

// DetectNvidiaGPUs runs `nvidia-smi -L`. A host without nvidia-smi has no
// GPUs; nvidia-smi that is present but fails is an error (a broken driver
// should not silently turn a GPU host into a CPU host).
func DetectNvidiaGPUs(ctx context.Context) ([]GPU, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, nil
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "-L")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("detect GPUs: %s -L: %w: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	gpus, err := ParseNvidiaSMIList(out)
	if err != nil {
		return nil, fmt.Errorf("detect GPUs: %s -L: %w", path, err)
	}
	return gpus, nil
}

var nvidiaSMILine = regexp.MustCompile(`^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?$`)

// ParseNvidiaSMIList parses the output of `nvidia-smi -L`:
//
//	GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5c6e...)
//
// MIG device lines (indented "MIG ..." under their GPU) are skipped: the
// GPU is the unit of a slot.
func ParseNvidiaSMIList(out []byte) ([]GPU, error) {
	var gpus []GPU
	sc := bufio.NewScanner(bytes.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r ")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "MIG ") {
			continue
		}
		m := nvidiaSMILine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d: %q is not \"GPU <index>: <name> (UUID: <uuid>)\"", n, line)
		}
		idx, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: GPU index %q: %w", n, m[1], err)
		}
		gpus = append(gpus, GPU{Index: idx, Name: m[2], UUID: m[3]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return gpus, nil
}

// errNoSlots is returned for a slot count that is not positive.
var errNoSlots = errors.New("slots must be at least 1")
