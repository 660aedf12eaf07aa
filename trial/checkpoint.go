package trial

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SaveCheckpoint writes a checkpoint named name into dir atomically: write
// fills a temporary file in dir, which is flushed, fsynced and renamed onto
// dir/name, and dir is fsynced. A reader therefore sees either no file or
// the complete one, never a torn checkpoint, and a crash mid-write leaves
// the previous checkpoints intact. It returns the absolute path, which the
// trainer then reports (Report.Checkpoint) — only after SaveCheckpoint has
// returned, as the protocol requires.
func SaveCheckpoint(dir, name string, write func(io.Writer) error) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	if dir == "" {
		return "", fmt.Errorf("checkpoint %q: empty directory", name)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("checkpoint %q: %w", name, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint %q: %w", name, err)
	}
	tmp, err := os.CreateTemp(abs, "."+name+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("checkpoint %q: %w", name, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	buf := bufio.NewWriterSize(tmp, 1<<20)
	if err := write(buf); err != nil {
		return "", fmt.Errorf("checkpoint %q: write: %w", name, err)
	}
	if err := buf.Flush(); err != nil {
		return "", fmt.Errorf("checkpoint %q: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("checkpoint %q: fsync: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("checkpoint %q: %w", name, err)
	}
	final := filepath.Join(abs, name)
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", fmt.Errorf("checkpoint %q: %w", name, err)
	}
	done = true
	syncDir(abs)
	return final, nil
}

// SaveCheckpoint writes a checkpoint into the trial's checkpoint directory
// (GLEANER_CHECKPOINT_DIR); see the package-level SaveCheckpoint.
func (e Env) SaveCheckpoint(name string, write func(io.Writer) error) (string, error) {
	return SaveCheckpoint(e.CheckpointDir, name, write)
}

// LoadCheckpoint opens path and hands it to read, buffered.
func LoadCheckpoint(path string, read func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("load checkpoint: %w", err)
	}
	defer f.Close()
	if err := read(bufio.NewReaderSize(f, 1<<20)); err != nil {
		return fmt.Errorf("load checkpoint %s: %w", path, err)
	}
	return nil
}

// CheckpointName is a conventional checkpoint file name for a step, padded
// so that lexical order is step order (what PruneCheckpoints relies on).
func CheckpointName(step int64, ext string) string {
	return fmt.Sprintf("step-%012d%s", step, ext)
}

// PruneCheckpoints removes all but the keep lexically greatest files of dir
// matching pattern (filepath.Match syntax, e.g. "step-*.gob"). Call it only
// after the newest checkpoint has been reported, so the checkpoint Gleaner
// would resume from is never removed; keep must be at least 1.
func PruneCheckpoints(dir, pattern string, keep int) error {
	if keep < 1 {
		return fmt.Errorf("prune checkpoints: keep %d must be at least 1", keep)
	}
	matches, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return fmt.Errorf("prune checkpoints: %w", err)
	}
	var names []string
	for _, m := range matches {
		if !strings.HasPrefix(filepath.Base(m), ".") { // temporaries of SaveCheckpoint
			names = append(names, m)
		}
	}
	sort.Strings(names)
	var errs []error
	for _, m := range names[:max(0, len(names)-keep)] {
		if err := os.Remove(m); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("prune checkpoints: %w", err)
	}
	return nil
}

func checkName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("checkpoint name %q: not a file name", name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("checkpoint name %q: must not contain a path separator", name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("checkpoint name %q: must not start with a dot (reserved for temporaries)", name)
	}
	return nil
}

// syncDir makes a rename durable. Some filesystems cannot fsync a
// directory; the rename is still atomic there, so errors are ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
