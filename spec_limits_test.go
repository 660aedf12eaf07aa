package gleaner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner"
)

// A file over MaxSpecBytes is a DecodeError naming the file, its size and
// the limit. (12 MiB, as reported: the file is sparse.)
func TestLoadSpecRejectsALargeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(12 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = gleaner.LoadSpec(path)
	var de *gleaner.DecodeError
	if !errors.As(err, &de) || de.File != path {
		t.Fatalf("LoadSpec: %v (%#v), want a DecodeError naming the file", err, de)
	}
	want := path + ": the spec is 12582912 bytes, over the limit of 1048576 bytes (1 MiB, gleaner.MaxSpecBytes)"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start %q", err, want)
	}
}

// countdown is a context whose Err is nil for its first `left` calls and
// context.Canceled after: a cancellation that lands mid-decode, without
// timing.
type countdown struct {
	context.Context
	left, calls int
}

func (c *countdown) Err() error {
	c.calls++
	if c.left--; c.left < 0 {
		return context.Canceled
	}
	return nil
}

// manyValuesSpec is a valid spec with n command arguments.
func manyValuesSpec(n int, format gleaner.Format) string {
	if format == gleaner.FormatJSON {
		return `{"name": "x", "objective": {"metric": "m"}, "budget": {"max_trials": 1}, "command": ["t"` +
			strings.Repeat(`, "a"`, n) + `]}`
	}
	return "name: x\nobjective: {metric: m}\nbudget: {max_trials: 1}\ncommand: [t" + strings.Repeat(", a", n) + "]\n"
}

// Decoding checks its context between values, and stops at the first
// check after the context is done: SIGINT stops `gleaner submit` promptly.
func TestDecodeSpecContextStopsBetweenValues(t *testing.T) {
	for _, format := range []gleaner.Format{gleaner.FormatJSON, gleaner.FormatYAML} {
		data := []byte(manyValuesSpec(5000, format))
		if _, err := gleaner.DecodeSpecContext(context.Background(), data, format); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		ctx := &countdown{Context: context.Background(), left: 1000}
		_, err := gleaner.DecodeSpecContext(ctx, data, format)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v, want context.Canceled", format, err)
		}
		var de *gleaner.DecodeError
		if errors.As(err, &de) {
			t.Errorf("%s: a cancelled decode is a DecodeError: %v", format, err)
		}
		if ctx.calls != 1001 {
			t.Errorf("%s: ctx.Err called %d times, want 1001: decoding went on after the context was done", format, ctx.calls)
		}

		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := gleaner.DecodeSpecContext(cancelled, data, format); !errors.Is(err, context.Canceled) {
			t.Errorf("%s, cancelled before: %v", format, err)
		}
	}

	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(manyValuesSpec(10, gleaner.FormatYAML)), 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := gleaner.LoadSpecContext(cancelled, path)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadSpecContext, cancelled: %v", err)
	}
}
