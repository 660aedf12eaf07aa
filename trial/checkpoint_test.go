package trial

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSaveCheckpointIsAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt", "nested")
	path, err := SaveCheckpoint(dir, "step-1.bin", func(w io.Writer) error {
		_, err := io.WriteString(w, "first")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(path) || path != filepath.Join(dir, "step-1.bin") {
		t.Errorf("path = %q", path)
	}

	// A failing writer leaves the previous checkpoint and no temporary.
	boom := errors.New("disk on fire")
	_, err = SaveCheckpoint(dir, "step-1.bin", func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("error = %v, want %v", err, boom)
	}
	var got string
	if err := LoadCheckpoint(path, func(r io.Reader) error {
		b, err := io.ReadAll(r)
		got = string(b)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got != "first" {
		t.Errorf("checkpoint = %q after a failed overwrite, want %q", got, "first")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("dir holds %d entries, want only the checkpoint", len(entries))
	}
}

func TestSaveCheckpointRejectsBadNames(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", `a\b`, ".hidden"} {
		if _, err := SaveCheckpoint(t.TempDir(), name, func(io.Writer) error { return nil }); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if _, err := SaveCheckpoint("", "x", func(io.Writer) error { return nil }); err == nil {
		t.Error("empty dir accepted")
	}
}

func TestLoadCheckpointErrors(t *testing.T) {
	if err := LoadCheckpoint(filepath.Join(t.TempDir(), "none"), func(io.Reader) error { return nil }); err == nil {
		t.Error("missing checkpoint loaded")
	}
	path, _ := SaveCheckpoint(t.TempDir(), "c", func(io.Writer) error { return nil })
	if err := LoadCheckpoint(path, func(io.Reader) error { return io.ErrUnexpectedEOF }); !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), path) {
		t.Errorf("error = %v", err)
	}
}

func TestPruneCheckpoints(t *testing.T) {
	dir := t.TempDir()
	var last string
	for _, step := range []int64{5, 100, 20, 1000} {
		p, err := SaveCheckpoint(dir, CheckpointName(step, ".gob"), func(w io.Writer) error {
			_, err := fmt.Fprint(w, step)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		last = p
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644)
	if err := PruneCheckpoints(dir, "step-*.gob", 2); err != nil {
		t.Fatal(err)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"notes.txt", CheckpointName(100, ".gob"), CheckpointName(1000, ".gob")}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("left %q, want %q", names, want)
	}
	if filepath.Base(last) != CheckpointName(1000, ".gob") {
		t.Errorf("last = %s", last)
	}
	if err := PruneCheckpoints(dir, "*", 0); err == nil {
		t.Error("keep 0 accepted")
	}
}
