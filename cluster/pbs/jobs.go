package pbs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Job is a job as `qstat -f -F json` describes it, the attributes the
// pilots need.
type Job struct {
	ID    string
	Name  string // Job_Name
	Owner string // Job_Owner: user@host
	Queue string
	// State is job_state: Q (queued), R (running), E (exiting), H (held),
	// W (waiting for its start time), T (in transit), S or U (suspended),
	// B (an array begun), F (finished, with qstat -x) ...
	State string
	// Substate is what the server is doing with it within State (42: R
	// and running; 60: R and being requeued; Ending); 0 if not listed.
	Substate int
	// Nodes are the vnodes of exec_vnode, empty while it waits.
	Nodes []string
	// Start is stime, when it started running; zero while it waits.
	Start time.Time
	// Walltime is Resource_List.walltime (for a shrink-to-fit job, set
	// when it starts); zero if none.
	Walltime time.Duration
	// End is Start + Walltime, when its time limit ends it; zero if
	// unknown.
	End time.Time
	// EstimatedStart and EstimatedNodes are the scheduler's plan for a
	// queued job (estimated.start_time, estimated.exec_vnode): zero and
	// empty for a job outside the plan.
	EstimatedStart time.Time
	EstimatedNodes []string
	// Created is ctime, when it was submitted; Finished is obittime,
	// when it ended (a finished job, with qstat -x), else zero.
	Created, Finished time.Time
	// RunCount is run_count: how many times it started (a requeued job
	// waits with the runs it had).
	RunCount int
}

// jobJSON is one job in qstat's JSON; values that PBS prints as strings
// in some versions and numbers in others are raw.
type jobJSON struct {
	Name         string                     `json:"Job_Name"`
	Owner        string                     `json:"Job_Owner"`
	State        string                     `json:"job_state"`
	Substate     json.RawMessage            `json:"substate"`
	Queue        string                     `json:"queue"`
	ExecVnode    string                     `json:"exec_vnode"`
	Stime        json.RawMessage            `json:"stime"`
	Ctime        json.RawMessage            `json:"ctime"`
	Obittime     json.RawMessage            `json:"obittime"`
	RunCount     json.RawMessage            `json:"run_count"`
	ResourceList map[string]json.RawMessage `json:"Resource_List"`
	Estimated    map[string]json.RawMessage `json:"estimated"`
}

// ParseJobs reads `qstat -f -F json` (and `qstat -x -f -F json`): the jobs
// in the order of their ids, times read in loc (the time zone of the host
// that ran qstat).
func ParseJobs(out []byte, loc *time.Location) ([]Job, error) {
	const cmd = "qstat -f -F json"
	var doc struct {
		Jobs map[string]jobJSON `json:"Jobs"`
	}
	if err := decodeJSON(out, &doc); err != nil {
		return nil, &ParseError{Command: cmd, Reason: err.Error()}
	}
	jobs := make([]Job, 0, len(doc.Jobs))
	for id, j := range doc.Jobs {
		bad := func(attr, value string, err error) error {
			return &ParseError{Command: cmd, Where: "job " + id + ": " + attr, Value: value, Reason: err.Error()}
		}
		if !validJobID(id) {
			return nil, &ParseError{Command: cmd, Where: "Jobs", Value: id, Reason: "want a job id (SEQ.SERVER)"}
		}
		if j.State == "" {
			return nil, bad("job_state", "", fmt.Errorf("missing"))
		}
		job := Job{ID: id, Name: j.Name, Owner: j.Owner, Queue: j.Queue, State: j.State}
		var err error
		if job.Nodes, err = ParseExecVnode(j.ExecVnode); err != nil {
			return nil, bad("exec_vnode", j.ExecVnode, err)
		}
		stime := rawString(j.Stime)
		if job.Start, err = ParseTime(stime, loc); err != nil {
			return nil, bad("stime", stime, err)
		}
		ctime, obit := rawString(j.Ctime), rawString(j.Obittime)
		if job.Created, err = ParseTime(ctime, loc); err != nil {
			return nil, bad("ctime", ctime, err)
		}
		if job.Finished, err = ParseTime(obit, loc); err != nil {
			return nil, bad("obittime", obit, err)
		}
		if ss := rawString(j.Substate); ss != "" {
			if job.Substate, err = strconv.Atoi(ss); err != nil || job.Substate < 0 {
				return nil, bad("substate", ss, fmt.Errorf("want a number"))
			}
		}
		if rc := rawString(j.RunCount); rc != "" {
			if job.RunCount, err = strconv.Atoi(rc); err != nil || job.RunCount < 0 {
				return nil, bad("run_count", rc, fmt.Errorf("want a count"))
			}
		}
		if wt := rawString(j.ResourceList["walltime"]); wt != "" {
			if job.Walltime, err = ParseDuration(wt); err != nil {
				return nil, bad("Resource_List.walltime", wt, err)
			}
		}
		if !job.Start.IsZero() && job.Walltime > 0 {
			job.End = job.Start.Add(job.Walltime)
		}
		est := rawString(j.Estimated["start_time"])
		if job.EstimatedStart, err = ParseTime(est, loc); err != nil {
			return nil, bad("estimated.start_time", est, err)
		}
		ev := rawString(j.Estimated["exec_vnode"])
		if job.EstimatedNodes, err = ParseExecVnode(ev); err != nil {
			return nil, bad("estimated.exec_vnode", ev, err)
		}
		jobs = append(jobs, job)
	}
	slices.SortFunc(jobs, func(a, b Job) int { return compareJobIDs(a.ID, b.ID) })
	return jobs, nil
}

// compareJobIDs orders job ids as qstat lists them: by sequence number,
// then as strings.
func compareJobIDs(a, b string) int {
	seq := func(id string) uint64 {
		s := id[:strings.IndexAny(id, ".[")]
		n, _ := strconv.ParseUint(s, 10, 64)
		return n
	}
	if sa, sb := seq(a), seq(b); sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// Vnode is a vnode as `pbsnodes -av -F json` describes it.
type Vnode struct {
	Name  string
	Mom   string // the host its mom runs on
	State string // free, job-busy, offline, down, resv-exclusive, ... (comma-separated)
	// Queue is the queue the vnode is tied to, if any (its jobs only).
	Queue string
	// Available is resources_available, each value as PBS printed it
	// (ncpus 64, ngpus 4, host, vnode, and site resources like system).
	Available map[string]string
}

// ParseVnodes reads `pbsnodes -av -F json`: the vnodes by name.
func ParseVnodes(out []byte) ([]Vnode, error) {
	const cmd = "pbsnodes -av -F json"
	var doc struct {
		Nodes map[string]struct {
			Mom       string                     `json:"Mom"`
			State     string                     `json:"state"`
			Queue     string                     `json:"queue"`
			Available map[string]json.RawMessage `json:"resources_available"`
		} `json:"nodes"`
	}
	if err := decodeJSON(out, &doc); err != nil {
		return nil, &ParseError{Command: cmd, Reason: err.Error()}
	}
	vs := make([]Vnode, 0, len(doc.Nodes))
	for name, n := range doc.Nodes {
		if name == "" || n.State == "" {
			return nil, &ParseError{Command: cmd, Where: "nodes", Value: name, Reason: "want a vnode with a name and a state"}
		}
		v := Vnode{Name: name, Mom: n.Mom, State: n.State, Queue: n.Queue, Available: map[string]string{}}
		for k, raw := range n.Available {
			v.Available[k] = rawString(raw)
		}
		vs = append(vs, v)
	}
	slices.SortFunc(vs, func(a, b Vnode) int { return strings.Compare(a.Name, b.Name) })
	return vs, nil
}

// rawString is a JSON string's value, or a number's (or other value's)
// text; empty for null or nothing.
func rawString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// decodeJSON decodes PBS's JSON into v. PBS writes some strings (a job's
// Variable_List, above all) without escaping them; decodeJSON repairs
// what it can (stray backslashes, raw control characters) and tries again.
func decodeJSON(out []byte, v any) error {
	err := json.Unmarshal(out, v)
	if err == nil {
		return nil
	}
	if json.Unmarshal(repairJSON(out), v) == nil {
		return nil
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return fmt.Errorf("no output (want a JSON object)")
	}
	return fmt.Errorf("not JSON: %w", err)
}

// repairJSON escapes, inside strings, raw control characters and
// backslashes that begin no JSON escape.
func repairJSON(b []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(b) + 64)
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\':
			if i+1 < len(b) && validEscape(b[i+1:]) {
				out.WriteByte(c)
				i++
				c = b[i]
			} else {
				out.WriteByte('\\') // a stray one: escape it
			}
		case c < 0x20:
			fmt.Fprintf(&out, `\u%04x`, c)
			continue
		}
		out.WriteByte(c)
	}
	return out.Bytes()
}

// validEscape reports whether b (after a backslash) begins a JSON escape.
func validEscape(b []byte) bool {
	switch b[0] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		if len(b) < 5 {
			return false
		}
		for _, h := range b[1:5] {
			if !strings.ContainsRune("0123456789abcdefABCDEF", rune(h)) {
				return false
			}
		}
		return true
	}
	return false
}
