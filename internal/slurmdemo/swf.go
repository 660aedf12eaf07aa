package slurmdemo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// SWFJob is one job of an SWF log, as the replay needs it. Times are
// seconds; -1 means unknown, as in the log.
type SWFJob struct {
	ID int64
	// Submit is the submit time (field 2), UnixStartTime added.
	Submit int64
	Wait   int64 // field 3
	Run    int64 // field 4
	// Nodes is the allocated processors (field 5), else the requested
	// (field 8); processor counts are node counts in the logs we replay.
	Nodes int
	// ReqTime is the requested time (field 9), -1 if unknown.
	ReqTime int64
}

// SWFLog is the replayable part of an SWF log.
type SWFLog struct {
	// MaxNodes is the machine size from the "; MaxNodes:" header, 0 if
	// absent.
	MaxNodes int
	// Jobs are the replayable jobs in file order: a known submit time, a
	// run time > 0 and a size > 0.
	Jobs []SWFJob
	// Skipped counts jobs left out: unknown submit time, run time or
	// size, or a zero run time or size.
	Skipped int
}

// swfFieldNames names the SWF fields ReadSWF checks (1-based).
var swfFieldNames = map[int]string{
	1: "job id", 2: "submit time", 3: "wait time", 4: "run time",
	5: "allocated processors", 8: "requested processors", 9: "requested time",
}

// maxSWFLine bounds one line; an SWF line is under 200 bytes.
const maxSWFLine = 64 << 10

// maxSWFNodes bounds a size, so that a corrupt field cannot ask the
// scaler for absurd numbers.
const maxSWFNodes = 1 << 24

// ErrSWF wraps every error of ReadSWF.
var ErrSWF = errors.New("SWF log")

// ReadSWF reads a job log in the Standard Workload Format (Parallel
// Workloads Archive): header comments ("; Key: value", of which MaxNodes
// and UnixStartTime are used) and lines of 18 whitespace-separated
// integers, -1 meaning unknown. Errors name the line and the field.
func ReadSWF(r io.Reader) (*SWFLog, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxSWFLine)
	var (
		log       SWFLog
		unixStart int64
		vals      [18]int64
		n         int
	)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrSWF, n, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if line[0] == ';' {
			key, val, ok := strings.Cut(strings.TrimSpace(line[1:]), ":")
			if !ok {
				continue
			}
			val = strings.TrimSpace(val)
			switch strings.TrimSpace(key) {
			case "MaxNodes":
				v, err := strconv.Atoi(val)
				if err != nil || v <= 0 || v > maxSWFNodes {
					return nil, bad("header MaxNodes: %q is not a node count in 1..%d", val, maxSWFNodes)
				}
				log.MaxNodes = v
			case "UnixStartTime":
				v, err := strconv.ParseInt(val, 10, 64)
				if err != nil || v < 0 || v > 1<<40 {
					return nil, bad("header UnixStartTime: %q is not unix seconds", val)
				}
				unixStart = v
			}
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != len(vals) {
			return nil, bad("%d fields, want 18", len(fields))
		}
		for i, f := range fields {
			name := swfFieldNames[i+1]
			if name == "" {
				continue // fields the replay does not use may hold anything numeric-looking
			}
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				// Some converters write whole numbers as "3600.0".
				fv, ferr := strconv.ParseFloat(f, 64)
				if ferr != nil || fv != math.Trunc(fv) || math.Abs(fv) > 1<<50 {
					return nil, bad("field %d (%s): %q is not a whole number", i+1, name, f)
				}
				v = int64(fv)
			}
			if v < -1 || v > 1<<40 {
				return nil, bad("field %d (%s): %d is out of range (want -1 for unknown, or 0..2^40)", i+1, name, v)
			}
			vals[i] = v
		}
		j := SWFJob{ID: vals[0], Submit: vals[1], Wait: vals[2], Run: vals[3], ReqTime: vals[8]}
		size := vals[4]
		if size == -1 {
			size = vals[7]
		}
		if size > maxSWFNodes {
			return nil, bad("field 5 (allocated processors): %d exceeds %d", size, maxSWFNodes)
		}
		if j.Submit == -1 || j.Run <= 0 || size <= 0 {
			log.Skipped++
			continue
		}
		j.Nodes = int(size)
		j.Submit += unixStart
		log.Jobs = append(log.Jobs, j)
	}
	if err := sc.Err(); err != nil {
		n++
		return nil, bad("%v", err)
	}
	return &log, nil
}
