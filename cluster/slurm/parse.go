package slurm

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ParseError is an output line of a Slurm command that Gleaner cannot
// read: it names the command, the line and the field.
type ParseError struct {
	Command string // e.g. "squeue --start"
	Line    int    // 1-based; 0 for the output as a whole
	Field   string // e.g. "start (%S)"
	Value   string
	Reason  string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.Command)
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	if e.Value != "" {
		v := e.Value
		if len(v) > 80 {
			v = v[:80] + "…"
		}
		fmt.Fprintf(&b, " %q", v)
	}
	return b.String() + ": " + e.Reason
}

// lines yields the non-blank lines of out with their 1-based numbers.
func lines(out []byte, each func(n int, line string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := each(n, line); err != nil {
			return err
		}
	}
	return sc.Err()
}

// parseTime reads a Slurm timestamp ("2026-11-23T12:34:56", in the
// controller's local time zone, which loc names). "N/A", "Unknown",
// "None" and "(null)" are the zero time.
func parseTime(s string, loc *time.Location) (time.Time, error) {
	switch s {
	case "N/A", "Unknown", "None", "(null)", "":
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("want YYYY-MM-DDTHH:MM:SS, N/A or Unknown")
	}
	return t, nil
}

// ParseDuration reads a Slurm time limit: "UNLIMITED" or "INFINITE" (0,
// no limit), minutes ("30"), "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM" or
// "D-HH:MM:SS".
func ParseDuration(s string) (time.Duration, error) {
	switch strings.ToUpper(s) {
	case "UNLIMITED", "INFINITE":
		return 0, nil
	case "":
		return 0, fmt.Errorf("empty")
	}
	bad := fmt.Errorf("want minutes, [D-]HH:MM:SS or UNLIMITED")
	num := func(p string) (int64, bool) {
		v, err := strconv.ParseInt(p, 10, 64)
		return v, err == nil && v >= 0 && v < 1<<31 && p[0] != '+'
	}
	var days int64
	rest := s
	if d, r, ok := strings.Cut(s, "-"); ok {
		v, ok := num(d)
		if !ok {
			return 0, bad
		}
		days, rest = v, r
	}
	parts := strings.Split(rest, ":")
	vals := make([]int64, len(parts))
	for i, p := range parts {
		v, ok := num(p)
		if !ok {
			return 0, bad
		}
		vals[i] = v
	}
	var h, m, sec int64
	switch {
	case days > 0 || strings.Contains(s, "-"):
		// D-HH, D-HH:MM, D-HH:MM:SS
		if len(vals) > 3 {
			return 0, bad
		}
		h = vals[0]
		if len(vals) > 1 {
			m = vals[1]
		}
		if len(vals) > 2 {
			sec = vals[2]
		}
	case len(vals) == 1:
		m = vals[0]
	case len(vals) == 2:
		m, sec = vals[0], vals[1]
	case len(vals) == 3:
		h, m, sec = vals[0], vals[1], vals[2]
	default:
		return 0, bad
	}
	total := ((days*24+h)*60+m)*60 + sec
	if total > 100*365*86400 {
		return 0, fmt.Errorf("longer than 100 years")
	}
	return time.Duration(total) * time.Second, nil
}

// FormatDuration writes d as Slurm reads a time limit ("D-HH:MM:SS"),
// rounded up to whole seconds.
func FormatDuration(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	days, s := s/86400, s%86400
	return fmt.Sprintf("%d-%02d:%02d:%02d", days, s/3600, s/60%60, s%60)
}

// splitFields splits a "|"-separated squeue line into exactly n fields.
func splitFields(cmd string, n int, line string, lineNo int) ([]string, error) {
	f := strings.Split(line, "|")
	if len(f) != n {
		return nil, &ParseError{Command: cmd, Line: lineNo, Value: line,
			Reason: fmt.Sprintf("want %d fields separated by |, got %d", n, len(f))}
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f, nil
}

// keyValues reads "Key=Value Key2=Value2 ..." (scontrol -o); a value runs
// to the next space.
func keyValues(line string) map[string]string {
	kv := map[string]string{}
	for _, tok := range strings.Fields(line) {
		if k, v, ok := strings.Cut(tok, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// ParseJobID reads `sbatch --parsable`: "JOBID" or "JOBID;CLUSTER".
func ParseJobID(out []byte) (string, error) {
	s := strings.TrimSpace(string(out))
	id, _, _ := strings.Cut(s, ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil || strings.ContainsAny(s, "\n") {
		return "", &ParseError{Command: "sbatch --parsable", Field: "job id", Value: s, Reason: "want a job id (digits), optionally ;CLUSTER"}
	}
	return id, nil
}

// PilotFormat is squeue's -o format that ParseJobs reads.
const PilotFormat = "%i|%T|%N|%S|%e|%k|%P"

// Job is a job as `squeue -o PilotFormat` lists it.
type Job struct {
	ID        string
	State     string // PENDING, RUNNING, COMPLETING, ...
	Nodes     []string
	Start     time.Time // actual start if running; expected, or zero, if pending
	End       time.Time // when its time limit ends it, zero if unknown
	Comment   string
	Partition string
}

// ParseJobs reads `squeue -h -o PilotFormat` output.
func ParseJobs(out []byte, loc *time.Location) ([]Job, error) {
	const cmd = "squeue -o " + PilotFormat
	var jobs []Job
	err := lines(out, func(n int, line string) error {
		f, err := splitFields(cmd, 7, line, n)
		if err != nil {
			return err
		}
		bad := func(field, value, reason string) error {
			return &ParseError{Command: cmd, Line: n, Field: field, Value: value, Reason: reason}
		}
		j := Job{ID: f[0], State: f[1], Comment: f[5], Partition: f[6]}
		if !validJobID(j.ID) {
			return bad("job id (%i)", f[0], "want digits (or an array id N_M)")
		}
		if j.State == "" || strings.ToUpper(j.State) != j.State {
			return bad("state (%T)", f[1], "want an upper-case state such as RUNNING")
		}
		if j.Nodes, err = ExpandHostlist(f[2]); err != nil {
			return bad("nodes (%N)", f[2], err.Error())
		}
		if j.Start, err = parseTime(f[3], loc); err != nil {
			return bad("start (%S)", f[3], err.Error())
		}
		if j.End, err = parseTime(f[4], loc); err != nil {
			return bad("end (%e)", f[4], err.Error())
		}
		jobs = append(jobs, j)
		return nil
	})
	return jobs, err
}

func validJobID(id string) bool {
	main, task, isArray := strings.Cut(id, "_")
	if _, err := strconv.ParseUint(main, 10, 64); err != nil || main[0] == '+' {
		return false
	}
	if isArray {
		return task != "" && !strings.ContainsAny(task, " |")
	}
	return true
}

// PlanFormat is squeue's -o format that ParsePlan reads, with --start.
const PlanFormat = "%i|%P|%Q|%S|%Y|%D|%j"

// PlannedJob is a pending job in the backfill scheduler's plan.
type PlannedJob struct {
	ID        string
	Partition string
	Priority  int64
	// Start is the expected start, zero when the scheduler has none yet.
	Start time.Time
	// Nodes are the nodes planned for it, empty when none are planned.
	Nodes     []string
	NodeCount int
	Name      string
}

// ParsePlan reads `squeue -h --start --states=PENDING -o PlanFormat`.
func ParsePlan(out []byte, loc *time.Location) ([]PlannedJob, error) {
	const cmd = "squeue --start -o " + PlanFormat
	var jobs []PlannedJob
	err := lines(out, func(n int, line string) error {
		f, err := splitFields(cmd, 7, line, n)
		if err != nil {
			return err
		}
		bad := func(field, value, reason string) error {
			return &ParseError{Command: cmd, Line: n, Field: field, Value: value, Reason: reason}
		}
		j := PlannedJob{ID: f[0], Partition: f[1], Name: f[6]}
		if !validJobID(j.ID) {
			return bad("job id (%i)", f[0], "want digits (or an array id N_M)")
		}
		if j.Priority, err = strconv.ParseInt(f[2], 10, 64); err != nil {
			return bad("priority (%Q)", f[2], "want an integer")
		}
		if j.Start, err = parseTime(f[3], loc); err != nil {
			return bad("start (%S)", f[3], err.Error())
		}
		if j.Nodes, err = ExpandHostlist(f[4]); err != nil {
			return bad("planned nodes (%Y)", f[4], err.Error())
		}
		if j.NodeCount, err = strconv.Atoi(f[5]); err != nil || j.NodeCount < 0 {
			return bad("node count (%D)", f[5], "want an integer ≥ 0")
		}
		jobs = append(jobs, j)
		return nil
	})
	return jobs, err
}

// Partition is what Gleaner reads of `scontrol show partition NAME -o`.
type Partition struct {
	Name string
	// GraceTime is how long a preempted job has between SIGTERM and
	// SIGKILL.
	GraceTime    time.Duration
	PreemptMode  string
	PriorityTier int
	MaxTime      time.Duration // 0: unlimited
	Nodes        []string
	State        string
}

// ParsePartitions reads `scontrol show partition [NAME] -o`: one line per
// partition.
func ParsePartitions(out []byte) ([]Partition, error) {
	const cmd = "scontrol show partition -o"
	var parts []Partition
	err := lines(out, func(n int, line string) error {
		kv := keyValues(line)
		bad := func(field, reason string) error {
			return &ParseError{Command: cmd, Line: n, Field: field, Value: kv[field], Reason: reason}
		}
		p := Partition{Name: kv["PartitionName"], PreemptMode: kv["PreemptMode"], State: kv["State"]}
		if p.Name == "" {
			return &ParseError{Command: cmd, Line: n, Field: "PartitionName", Value: line, Reason: "missing"}
		}
		g, err := strconv.ParseUint(kv["GraceTime"], 10, 32)
		if err != nil {
			return bad("GraceTime", "want seconds")
		}
		p.GraceTime = time.Duration(g) * time.Second
		if v, ok := kv["PriorityTier"]; ok {
			if p.PriorityTier, err = strconv.Atoi(v); err != nil {
				return bad("PriorityTier", "want an integer")
			}
		}
		if v, ok := kv["MaxTime"]; ok {
			if p.MaxTime, err = ParseDuration(v); err != nil {
				return bad("MaxTime", err.Error())
			}
		}
		if p.Nodes, err = ExpandHostlist(kv["Nodes"]); err != nil {
			return bad("Nodes", err.Error())
		}
		parts = append(parts, p)
		return nil
	})
	return parts, err
}

// Config is what Gleaner reads of `scontrol show config`.
type Config struct {
	Version string
	// KillWait is how long a job past its time limit has between SIGTERM
	// and SIGKILL.
	KillWait time.Duration
	// BackfillInterval is bf_interval (default 30 s): how often the
	// backfill scheduler looks for holes.
	BackfillInterval    time.Duration
	PreemptType         string
	PreemptMode         string
	SlurmctldParameters []string
	// PreemptParameters (Slurm 23.02 on; absent before): send_user_signal
	// there is SlurmctldParameters' preempt_send_user_signal.
	PreemptParameters []string
	SchedulerType     string
}

// SendsUserSignal reports PreemptParameters=send_user_signal or (before
// Slurm 23.02) SlurmctldParameters=preempt_send_user_signal: a preempted
// job first gets the signal its --signal option names.
func (c Config) SendsUserSignal() bool {
	return slices.Contains(c.SlurmctldParameters, "preempt_send_user_signal") ||
		slices.Contains(c.PreemptParameters, "send_user_signal")
}

// splitList splits a comma-separated value of `scontrol show config`;
// "(null)" is none.
func splitList(v string) []string {
	if v == "(null)" || v == "" {
		return nil
	}
	var l []string
	for _, p := range strings.Split(v, ",") {
		l = append(l, strings.TrimSpace(p))
	}
	return l
}

// ParseConfig reads `scontrol show config` ("Key = Value" lines).
func ParseConfig(out []byte) (Config, error) {
	const cmd = "scontrol show config"
	c := Config{BackfillInterval: 30 * time.Second}
	seen := false
	err := lines(out, func(n int, line string) error {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil // headings such as "Configuration data as of ..."
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		bad := func(reason string) error {
			return &ParseError{Command: cmd, Line: n, Field: k, Value: v, Reason: reason}
		}
		switch k {
		case "SLURM_VERSION":
			if v == "" {
				return bad("empty")
			}
			c.Version, seen = v, true
		case "KillWait":
			secs, err := strconv.ParseUint(strings.TrimSuffix(v, " sec"), 10, 32)
			if err != nil {
				return bad("want N sec")
			}
			c.KillWait = time.Duration(secs) * time.Second
		case "PreemptType":
			c.PreemptType = v
		case "PreemptMode":
			c.PreemptMode = v
		case "SchedulerType":
			c.SchedulerType = v
		case "SlurmctldParameters":
			c.SlurmctldParameters = splitList(v)
		case "PreemptParameters":
			c.PreemptParameters = splitList(v)
		case "SchedulerParameters":
			for _, p := range strings.Split(v, ",") {
				if s, ok := strings.CutPrefix(strings.TrimSpace(p), "bf_interval="); ok {
					secs, err := strconv.ParseUint(s, 10, 32)
					if err != nil || secs == 0 {
						return bad("bf_interval: want seconds ≥ 1")
					}
					c.BackfillInterval = time.Duration(secs) * time.Second
				}
			}
		}
		return nil
	})
	if err == nil && !seen {
		err = &ParseError{Command: cmd, Field: "SLURM_VERSION", Reason: "missing: is this scontrol's output?"}
	}
	return c, err
}

// Reservation is what Gleaner reads of `scontrol show reservation -o`.
type Reservation struct {
	Name       string
	Start, End time.Time
	Nodes      []string
	State      string
}

// ParseReservations reads `scontrol show reservation -o`; "No
// reservations in the system" is none.
func ParseReservations(out []byte, loc *time.Location) ([]Reservation, error) {
	const cmd = "scontrol show reservation -o"
	var rs []Reservation
	err := lines(out, func(n int, line string) error {
		if strings.HasPrefix(strings.TrimSpace(line), "No reservations") {
			return nil
		}
		kv := keyValues(line)
		bad := func(field, reason string) error {
			return &ParseError{Command: cmd, Line: n, Field: field, Value: kv[field], Reason: reason}
		}
		r := Reservation{Name: kv["ReservationName"], State: kv["State"]}
		if r.Name == "" {
			return &ParseError{Command: cmd, Line: n, Field: "ReservationName", Value: line, Reason: "missing"}
		}
		var err error
		if r.Start, err = parseTime(kv["StartTime"], loc); err != nil || r.Start.IsZero() {
			return bad("StartTime", "want YYYY-MM-DDTHH:MM:SS")
		}
		if r.End, err = parseTime(kv["EndTime"], loc); err != nil {
			return bad("EndTime", err.Error())
		}
		if r.Nodes, err = ExpandHostlist(kv["Nodes"]); err != nil {
			return bad("Nodes", err.Error())
		}
		rs = append(rs, r)
		return nil
	})
	return rs, err
}
