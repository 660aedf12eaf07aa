package data

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestEveryFileConstantOpensNonEmpty(t *testing.T) {
	for _, rel := range []string{SummitIdle, SummitIdle15Days, Theta2022, HPO10, HPO1000, ImageNetMixed, Gavel} {
		rc, err := Open(Prefix + rel)
		if err != nil {
			t.Fatalf("Open(%q): %v", Prefix+rel, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("reading %s: %v", rel, err)
		}
		if len(b) == 0 {
			t.Errorf("%s is empty", rel)
		}
	}
}

func TestScalingDirHoldsCurves(t *testing.T) {
	fsys, err := Dir(Prefix + Scaling)
	if err != nil {
		t.Fatalf("Dir(%q): %v", Prefix+Scaling, err)
	}
	csvs, err := fs.Glob(fsys, "*.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(csvs) != 24 {
		t.Errorf("scaling/ has %d *.csv files, want 24 (4 apps × 6 clusters)", len(csvs))
	}
	b, err := fs.ReadFile(fsys, "cifar10__aws.csv")
	if err != nil || len(b) == 0 {
		t.Errorf("scaling/cifar10__aws.csv: %d bytes, err %v", len(b), err)
	}
}

func TestUnknownEmbeddedNamesFailNamingThem(t *testing.T) {
	for _, name := range []string{Prefix + "traces/nope.csv", Prefix + "../etc/passwd", Prefix + Scaling} {
		_, err := Open(name)
		if err == nil {
			t.Errorf("Open(%q) succeeded", name)
			continue
		}
		if !bytes.Contains([]byte(err.Error()), []byte(name)) {
			t.Errorf("Open(%q) error %q does not name it", name, err)
		}
	}
	if _, err := Open(Prefix + "traces/nope.csv"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing embedded file: %v, want fs.ErrNotExist", err)
	}
	for _, name := range []string{Prefix + "nope", Prefix + Theta2022, Prefix + "/scaling"} {
		_, err := Dir(name)
		if err == nil {
			t.Errorf("Dir(%q) succeeded", name)
			continue
		}
		if !bytes.Contains([]byte(err.Error()), []byte(name)) {
			t.Errorf("Dir(%q) error %q does not name it", name, err)
		}
	}
}

func TestDiskNamesUseTheFileSystem(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(path, []byte("unix_time,event,nodes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "unix_time,event,nodes\n" {
		t.Errorf("Open(%q) read %q", path, b)
	}
	if IsEmbedded(path) {
		t.Errorf("IsEmbedded(%q) = true", path)
	}

	fsys, err := Dir(dir)
	if err != nil {
		t.Fatalf("Dir(%q): %v", dir, err)
	}
	if _, err := fs.Stat(fsys, "trace.csv"); err != nil {
		t.Errorf("Dir(%q) does not show trace.csv: %v", dir, err)
	}

	missing := filepath.Join(dir, "missing.csv")
	if _, err := Open(missing); err == nil || !bytes.Contains([]byte(err.Error()), []byte(missing)) {
		t.Errorf("Open(%q) = %v, want an error naming it", missing, err)
	}
	if _, err := Dir(path); err == nil || !bytes.Contains([]byte(err.Error()), []byte(path)) {
		t.Errorf("Dir(%q) of a file = %v, want an error naming it", path, err)
	}
}

// TestEmbeddedMatchesFolder checks that the binary carries exactly the files
// of this folder, byte for byte: nothing missing, nothing stale.
func TestEmbeddedMatchesFolder(t *testing.T) {
	embedded := 0
	err := fs.WalkDir(FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		embedded++
		got, err := fs.ReadFile(FS(), path)
		if err != nil {
			return err
		}
		want, err := os.ReadFile(filepath.FromSlash(path))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			t.Errorf("embedded %s differs from the file in data/", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	onDisk := 0
	for _, top := range []string{"traces", "workloads", "scaling", "gpus"} {
		err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				onDisk++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if embedded != onDisk || embedded == 0 {
		t.Errorf("embedded %d files, data/ holds %d", embedded, onDisk)
	}
}

func TestIsEmbedded(t *testing.T) {
	if !IsEmbedded(Prefix + Theta2022) {
		t.Errorf("IsEmbedded(%q) = false", Prefix+Theta2022)
	}
	if IsEmbedded(Theta2022) {
		t.Errorf("IsEmbedded(%q) = true", Theta2022)
	}
}

// TestSummitFiveDaysAreTheFifteensStart checks that the two Summit traces
// are one conversion of one table (scripts/bftrainer_trace.py): the five-day
// file's events are the fifteen-day file's events before 15 Feb 2021 00:00
// UTC, line for line. Only the first header comment differs.
func TestSummitFiveDaysAreTheFifteensStart(t *testing.T) {
	const fifteenth = "1613347200" // 2021-02-15 00:00:00 UTC; every time has 10 digits
	events := func(rel string) [][]byte {
		b, err := fs.ReadFile(FS(), rel)
		if err != nil {
			t.Fatal(err)
		}
		var lines [][]byte
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(l) > 0 && l[0] >= '0' && l[0] <= '9' { // events, not comments or the column header
				lines = append(lines, l)
			}
		}
		return lines
	}
	five, fifteen := events(SummitIdle), events(SummitIdle15Days)
	n := 0
	for n < len(fifteen) && string(fifteen[n][:min(len(fifteen[n]), len(fifteenth))]) < fifteenth {
		n++
	}
	if len(five) != n {
		t.Fatalf("%s: %d events, %s: %d before the 15th", SummitIdle, len(five), SummitIdle15Days, n)
	}
	for i := range five {
		if !bytes.Equal(five[i], fifteen[i]) {
			t.Fatalf("line %d differs:\n%s: %.80s\n%s: %.80s", i, SummitIdle, five[i], SummitIdle15Days, fifteen[i])
		}
	}
	if len(fifteen) <= n {
		t.Errorf("%s has no events after the 14th", SummitIdle15Days)
	}
}
