package activities

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		name, log, want string
	}{
		{"short", "step 1\nTraceback:\n  boom\nValueError: lr\n", "\n| step 1\n| Traceback:\n|   boom\n| ValueError: lr"},
		{"last five, blanks skipped", "1\n2\n3\n\n4\n5\n6\n\n\n", "\n| 2\n| 3\n| 4\n| 5\n| 6"},
		{"carriage returns", "epoch 1\rprogress 50%\rerror: nan\n", "\n| epoch 1\n| progress 50%\n| error: nan"},
		{"a long line is cut", long + "\n", "\n| " + strings.Repeat("x", 199) + "…"},
		{"empty", "", "\n(it wrote nothing to its log)"},
		{"blank", "\n \n", "\n(it wrote nothing to its log)"},
	} {
		if got := logTail(write(strings.ReplaceAll(c.name, " ", "-"), c.log), 0); got != c.want {
			t.Errorf("%s: logTail = %q, want %q", c.name, got, c.want)
		}
	}
	// A big log: only its end is read, and its cut first line is dropped.
	big := strings.Repeat("noise line\n", 5000) + "the end\n"
	if got := logTail(write("big", big), 0); !strings.HasSuffix(got, "\n| the end") || strings.Count(got, "\n") != 5 {
		t.Errorf("big log: %q", got)
	}
	if got := logTail(filepath.Join(dir, "missing"), 0); got != "" {
		t.Errorf("missing log: %q, want nothing", got)
	}

	// From a mark: only what the attempt after it wrote.
	p := write("attempts", "first attempt\nfailed\n")
	m := markLog(p)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("second attempt\nfailed again\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := m.tail(p); got != "\n| second attempt\n| failed again" {
		t.Errorf("tail from the mark: %q", got)
	}
	if got := markLog(p).tail(p); got != "\n(it wrote nothing to its log)" {
		t.Errorf("nothing since the mark: %q", got)
	}
	if got := m.tail(filepath.Join(dir, "short")); got != "\n| step 1\n| Traceback:\n|   boom\n| ValueError: lr" {
		t.Errorf("another log than the mark's: %q", got)
	}
	if got := markLog(filepath.Join(dir, "missing")).tail(p); !strings.HasPrefix(got, "\n| first attempt") {
		t.Errorf("a mark of no log yet: %q", got)
	}
}

func TestWithFirstLine(t *testing.T) {
	if got := withFirstLine("exited (log: x)\n| a\n| b", "; max"); got != "exited (log: x); max\n| a\n| b" {
		t.Errorf("got %q", got)
	}
	if got := withFirstLine("exited", "; max"); got != "exited; max" {
		t.Errorf("got %q", got)
	}
}
