package slurm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The seed corpus: real outputs recorded from Slurm 22.05 daemons
// (testdata/outputs, README.md there names each command), plus the
// committed testdata/fuzz corpus. Every parser must return a value or a
// *ParseError naming the command, never panic.

func addOutputs(f *testing.F, names ...string) {
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("testdata", "outputs", name))
		if err != nil {
			f.Fatalf("seed %s: %v", name, err)
		}
		f.Add(string(b))
		// And each line alone, and a line cut short.
		for _, line := range strings.Split(string(b), "\n") {
			if line != "" {
				f.Add(line)
				f.Add(line[:len(line)/2])
			}
		}
	}
}

func checkParseError(t *testing.T, err error, command string) {
	t.Helper()
	if err == nil {
		return
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		// The scanner's own error on an over-long line is the only other.
		if !strings.Contains(err.Error(), "too long") {
			t.Fatalf("error %v (%T) is no *ParseError", err, err)
		}
		return
	}
	if !strings.HasPrefix(pe.Error(), command) {
		t.Fatalf("error %q does not name the command %q", pe.Error(), command)
	}
}

func FuzzParseJobs(f *testing.F) {
	addOutputs(f, "squeue-pilots.txt")
	f.Fuzz(func(t *testing.T, out string) {
		jobs, err := ParseJobs([]byte(out), time.UTC)
		checkParseError(t, err, "squeue")
		for _, j := range jobs {
			if !validJobID(j.ID) || j.State == "" {
				t.Fatalf("accepted job %+v", j)
			}
		}
	})
}

func FuzzParsePlan(f *testing.F) {
	addOutputs(f, "squeue-start.txt")
	f.Fuzz(func(t *testing.T, out string) {
		plan, err := ParsePlan([]byte(out), time.UTC)
		checkParseError(t, err, "squeue --start")
		for _, j := range plan {
			if j.NodeCount < 0 || len(j.Nodes) > MaxHostlist {
				t.Fatalf("accepted job %+v", j)
			}
		}
	})
}

func FuzzParsePartitions(f *testing.F) {
	addOutputs(f, "scontrol-partition-glean.txt", "scontrol-partitions.txt")
	f.Fuzz(func(t *testing.T, out string) {
		parts, err := ParsePartitions([]byte(out))
		checkParseError(t, err, "scontrol show partition")
		for _, p := range parts {
			if p.Name == "" || p.GraceTime < 0 || p.MaxTime < 0 {
				t.Fatalf("accepted partition %+v", p)
			}
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	addOutputs(f, "scontrol-config.txt")
	f.Fuzz(func(t *testing.T, out string) {
		c, err := ParseConfig([]byte(out))
		checkParseError(t, err, "scontrol show config")
		if err == nil && (c.Version == "" || c.BackfillInterval <= 0 || c.KillWait < 0) {
			t.Fatalf("accepted config %+v", c)
		}
	})
}

func FuzzParseReservations(f *testing.F) {
	addOutputs(f, "scontrol-reservation.txt", "scontrol-reservation-none.txt")
	f.Fuzz(func(t *testing.T, out string) {
		rs, err := ParseReservations([]byte(out), time.UTC)
		checkParseError(t, err, "scontrol show reservation")
		for _, r := range rs {
			if r.Name == "" || r.Start.IsZero() {
				t.Fatalf("accepted reservation %+v", r)
			}
		}
	})
}

func FuzzParseJobID(f *testing.F) {
	addOutputs(f, "sbatch-parsable.txt")
	f.Fuzz(func(t *testing.T, out string) {
		id, err := ParseJobID([]byte(out))
		checkParseError(t, err, "sbatch")
		if err == nil && !validJobID(id) {
			t.Fatalf("accepted job id %q", id)
		}
	})
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"g[1-6]", "g1,g2", "n[001-010],x[1-2]-y[3]", "r[1-2]-n[01-03]", "(null)", "g[1-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ExpandHostlist(s)
		if err != nil {
			return
		}
		if len(names) > MaxHostlist {
			t.Fatalf("%d names", len(names))
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "[],") {
				t.Fatalf("%q expanded to name %q", s, n)
			}
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"UNLIMITED", "30", "05:30", "01:00:00", "1-00:00:00", "2-03", "1-02:03"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("%q: negative %v", s, d)
		}
		if d > 0 {
			back, err := ParseDuration(FormatDuration(d))
			if err != nil || back != d {
				t.Fatalf("%q = %v; FormatDuration %q reads back %v, %v", s, d, FormatDuration(d), back, err)
			}
		}
	})
}
