//go:build unix

package gleaner_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// LoadSpec reads at most MaxSpecBytes+1 bytes: from a pipe that holds more
// and never ends it returns, where reading to the end would block forever.
func TestLoadSpecReadsAtMostTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "endless.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	writer := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			writer <- nil
			return
		}
		writer <- w
		// Blocks, once the reader stops reading, until the test closes w.
		_, _ = w.Write(make([]byte, gleaner.MaxSpecBytes+2))
	}()
	done := make(chan error, 1)
	go func() {
		_, err := gleaner.LoadSpec(path)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute): // a deadlock guard, not a timing
		t.Fatal("LoadSpec is still reading a pipe that holds more than MaxSpecBytes")
	}
	if w := <-writer; w != nil {
		w.Close()
	}
	var de *gleaner.DecodeError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "the spec is more than 1048576 bytes, over the limit") {
		t.Fatalf("LoadSpec: %v, want a DecodeError about the size", err)
	}
}
