package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseNvidiaSMIList(t *testing.T) {
	out := "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5c6e0a4b-1111)\n" +
		"GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-aaaa)\n" +
		"  MIG 1g.5gb     Device  0: (UUID: MIG-bbbb)\n" +
		"GPU 2: Tesla T4\n"
	gpus, err := ParseNvidiaSMIList([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []GPU{
		{Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-5c6e0a4b-1111"},
		{Index: 1, Name: "NVIDIA A100-SXM4-40GB", UUID: "GPU-aaaa"},
		{Index: 2, Name: "Tesla T4"},
	}
	if fmt.Sprint(gpus) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", gpus, want)
	}
	if _, err := ParseNvidiaSMIList([]byte("No devices were found\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("unexpected output accepted: %v", err)
	}
}

func TestNewLocalHost(t *testing.T) {
	ctx := context.Background()
	two := func(context.Context) ([]GPU, error) {
		return []GPU{{Index: 0, Name: "A"}, {Index: 1, Name: "A"}}, nil
	}
	h, err := NewLocalHost(ctx, LocalConfig{Detect: two})
	if err != nil || h.Slots != 2 || len(h.GPUs) != 2 || h.NodeType(1) != "A" {
		t.Errorf("detected host %+v, %v; want 2 GPU slots", h, err)
	}
	if h, err = NewLocalHost(ctx, LocalConfig{Slots: 1, Detect: two}); err != nil || h.Slots != 1 || len(h.GPUs) != 1 {
		t.Errorf("one slot of two GPUs: %+v, %v", h, err)
	}
	h, err = NewLocalHost(ctx, LocalConfig{Slots: 3, Detect: NoGPUs})
	if err != nil || h.Slots != 3 || h.NodeType(0) != CPUNodeType {
		t.Errorf("CPU host %+v, %v", h, err)
	}
	nodes, err := h.StaticSource().Idle(ctx, w0)
	if err != nil || fmt.Sprint(nodes) != fmt.Sprint([]Node{{ID: "local-0", Type: "cpu"}, {ID: "local-1", Type: "cpu"}, {ID: "local-2", Type: "cpu"}}) {
		t.Errorf("static source of a CPU host: %v, %v", nodes, err)
	}

	broken := errors.New("driver mismatch")
	for _, tc := range []struct {
		cfg  LocalConfig
		want string
	}{
		{LocalConfig{Slots: 3, Detect: two}, "3 slots but only 2 GPUs"},
		{LocalConfig{Detect: NoGPUs}, "no GPUs found"},
		{LocalConfig{Slots: -1, GPUs: []GPU{}}, "slots: -1"},
		{LocalConfig{GPUs: []GPU{{Index: 1}, {Index: 1}}}, "GPU index 1"},
		{LocalConfig{Detect: func(context.Context) ([]GPU, error) { return nil, broken }}, "driver mismatch"},
	} {
		if _, err := NewLocalHost(ctx, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := NewLocalLauncher(LocalHost{}); err == nil {
		t.Error("launcher without slots accepted")
	}
}

func TestSlotIDs(t *testing.T) {
	for i := range 12 {
		if got, err := ParseSlotID(SlotID(i)); err != nil || got != i {
			t.Errorf("ParseSlotID(SlotID(%d)) = %d, %v", i, got, err)
		}
	}
	for _, bad := range []string{"local-", "local-01", "local--1", "local-x", "h50n16", ""} {
		if _, err := ParseSlotID(bad); err == nil {
			t.Errorf("ParseSlotID(%q) accepted", bad)
		}
	}
}

func TestStaticSource(t *testing.T) {
	s, err := NewStaticSource(11, "gpu")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := s.Idle(context.Background(), w0)
	if err != nil || len(nodes) != 11 || nodes[0].ID != "local-0" || nodes[1].ID != "local-1" || nodes[2].ID != "local-10" {
		t.Errorf("Idle = %v, %v; want 11 slots sorted by id", nodes, err)
	}
	nodes[0].ID = "changed"
	if again, _ := s.Idle(context.Background(), w0); again[0].ID != "local-0" {
		t.Error("Idle returned the source's own slice")
	}
	if _, err := NewStaticSource(0, ""); err == nil {
		t.Error("0 slots accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Idle(ctx, w0); err == nil {
		t.Error("cancelled context ignored")
	}
}

// fakeNvidiaSMI puts an nvidia-smi script first on PATH.
func fakeNvidiaSMI(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestDetectNvidiaGPUsRunsNvidiaSMI(t *testing.T) {
	fakeNvidiaSMI(t, `[ "$1" = -L ] || exit 2; echo "GPU 0: Fake H100 (UUID: GPU-0)"; echo "GPU 1: Fake H100 (UUID: GPU-1)"`)
	host, err := NewLocalHost(context.Background(), LocalConfig{})
	if err != nil || host.Slots != 2 || host.NodeType(0) != "Fake H100" {
		t.Fatalf("host %+v, %v; want 2 slots of Fake H100", host, err)
	}
	l, err := NewLocalLauncher(host)
	if err != nil {
		t.Fatal(err)
	}
	p := launch(t, l, shSpec(t, "env", "local-1"))
	waitExit(t, p)
	if got := envOf(t, p.LogFile())[EnvCUDAVisibleDevices]; got != "1" {
		t.Errorf("CUDA_VISIBLE_DEVICES = %q, want 1", got)
	}

	fakeNvidiaSMI(t, `echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" >&2; exit 9`)
	if _, err := DetectNvidiaGPUs(context.Background()); err == nil || !strings.Contains(err.Error(), "couldn't communicate") {
		t.Errorf("failing nvidia-smi: %v, want its message", err)
	}
	t.Setenv("PATH", t.TempDir())
	if gpus, err := DetectNvidiaGPUs(context.Background()); gpus != nil || err != nil {
		t.Errorf("no nvidia-smi: %v, %v; want no GPUs and no error", gpus, err)
	}
}
