package workflows

import (
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// Tuning is the workflow tuning a campaign runs with; each field's zero
// value is its default. A campaign started by the client carries none
// (CampaignInput.Tuning nil); a test that needs smaller numbers sets them
// in the campaign's input, never in package state another test reads.
type Tuning struct {
	// RecordsChunk is how many ended inline trials one TrialRecords
	// workflow keeps (default gleaner.InlineRecordsChunk: its input and
	// result, about 0.5 KB a trial).
	RecordsChunk int `json:"records_chunk,omitempty"`
	// RecordsBytes bounds the ended inline trials waiting for a chunk, as
	// JSON (default 256 KiB): a chunk is cut at RecordsChunk trials or
	// this size, whichever comes first, so that large parameters (a NAS
	// architecture) keep the chunk's payload and the state carried across
	// continue-as-new far below Temporal's 2 MB limit on one payload.
	RecordsBytes int `json:"records_bytes,omitempty"`
	// DrainWait is how long an inline campaign's run about to continue as
	// new lets its running trials finish before it stops them at a
	// checkpoint, to resume in the next run (default 30 s).
	DrainWait time.Duration `json:"drain_wait,omitempty"`
	// ReportInterval bounds how often a running trial workflow reports
	// its metrics to its campaign (default 10 s; the final report is
	// always sent). The campaign passes it on in TrialInput.ReportInterval.
	ReportInterval time.Duration `json:"report_interval,omitempty"`
}

// InlineRecordsChunk is the default Tuning.RecordsChunk.
const InlineRecordsChunk = gleaner.InlineRecordsChunk

const (
	defaultRecordsBytes   = 256 << 10
	defaultDrainWait      = 30 * time.Second
	defaultReportInterval = 10 * time.Second
)

func (t *Tuning) recordsChunk() int {
	if t != nil && t.RecordsChunk > 0 {
		return t.RecordsChunk
	}
	return InlineRecordsChunk
}

func (t *Tuning) recordsBytes() int {
	if t != nil && t.RecordsBytes > 0 {
		return t.RecordsBytes
	}
	return defaultRecordsBytes
}

func (t *Tuning) drainWait() time.Duration {
	if t != nil && t.DrainWait > 0 {
		return t.DrainWait
	}
	return defaultDrainWait
}

// reportInterval is a trial workflow's: its input's, else the default.
func reportInterval(in TrialInput) time.Duration {
	if in.ReportInterval > 0 {
		return in.ReportInterval
	}
	return defaultReportInterval
}
