package slurmdemo

import (
	"errors"
	"fmt"
	"io"

	"github.com/gleaner-hpc/gleaner/internal/swf"
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

// swfUsed are the fields ReadSWF reads and checks; the others may hold
// anything.
var swfUsed = []swf.Field{swf.JobID, swf.SubmitTime, swf.WaitTime, swf.RunTime, swf.AllocProcs, swf.ReqProcs, swf.ReqTime}

// maxSWFNodes bounds a size, so that a corrupt field cannot ask the
// scaler for absurd numbers.
const maxSWFNodes = 1 << 24

// maxSWFTime bounds the times and counts ReadSWF reads, so that sums of
// them stay far from overflowing.
const maxSWFTime = 1 << 40

// ErrSWF wraps every error of ReadSWF.
var ErrSWF = errors.New("SWF log")

// ReadSWF reads a job log in the Standard Workload Format (Parallel
// Workloads Archive): header comments ("; Key: value", of which MaxNodes
// and UnixStartTime are used) and lines of 18 whitespace-separated
// integers, -1 meaning unknown. Errors name the line and the field.
func ReadSWF(r io.Reader) (*SWFLog, error) {
	rd := swf.NewReader(r, swf.Limits{MaxNodes: maxSWFNodes, UnixSeconds: true})
	var log SWFLog
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSWF, err)
		}
		var vals [swf.NumFields + 1]int64 // vals[f] is field f
		for _, f := range swfUsed {
			v, err := rec.Whole(f)
			if err == nil && (v < swf.Unknown || v > maxSWFTime) {
				err = rec.Errorf(f, "%d is out of range (want -1 for unknown, or 0..2^40)", v)
			}
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSWF, err)
			}
			vals[f] = v
		}
		j := SWFJob{ID: vals[swf.JobID], Submit: vals[swf.SubmitTime], Wait: vals[swf.WaitTime], Run: vals[swf.RunTime], ReqTime: vals[swf.ReqTime]}
		size, sizeField := vals[swf.AllocProcs], swf.AllocProcs
		if size == swf.Unknown {
			size, sizeField = vals[swf.ReqProcs], swf.ReqProcs
		}
		if size > maxSWFNodes {
			return nil, fmt.Errorf("%w: %w", ErrSWF, rec.Errorf(sizeField, "%d exceeds %d", size, maxSWFNodes))
		}
		if j.Submit == swf.Unknown || j.Run <= 0 || size <= 0 {
			log.Skipped++
			continue
		}
		j.Nodes = int(size)
		j.Submit += int64(rd.Header().UnixStartTime)
		log.Jobs = append(log.Jobs, j)
	}
	log.MaxNodes = rd.Header().MaxNodes
	return &log, nil
}
