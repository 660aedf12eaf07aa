package trial

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Environment variables the launcher sets for every trial process.
const (
	EnvTrialID       = "GLEANER_TRIAL_ID"
	EnvCampaignID    = "GLEANER_CAMPAIGN_ID"
	EnvParamsFile    = "GLEANER_PARAMS_FILE"    // JSON object of the trial's parameters
	EnvNodes         = "GLEANER_NODES"          // node count, decimal
	EnvHostfile      = "GLEANER_HOSTFILE"       // one node per line
	EnvCheckpointDir = "GLEANER_CHECKPOINT_DIR" // stable for the trial across restarts
	EnvResumeFrom    = "GLEANER_RESUME_FROM"    // last completed checkpoint; empty at first start
	EnvReportFile    = "GLEANER_REPORT_FILE"    // append one JSON object per line
	EnvBudget        = "GLEANER_BUDGET"         // decimal > 0: train until the budget unit's counter reaches it; empty: no budget
	EnvBudgetUnit    = "GLEANER_BUDGET_UNIT"    // samples, steps or epochs; set whenever GLEANER_BUDGET is
)

// Budget units: which cumulative report counter a budget (GLEANER_BUDGET)
// counts, Report.Samples, Report.Step or Report.Epoch.
const (
	BudgetSamples = "samples"
	BudgetSteps   = "steps"
	BudgetEpochs  = "epochs"
)

// The rendezvous: where a trainer process stands among the hosts of a run
// that spans several (one process per host; see Rendezvous). A launcher
// sets every one of them, for single-host runs too.
const (
	EnvNodeRank   = "GLEANER_NODE_RANK"   // this host's rank, 0..GLEANER_NUM_HOSTS-1; rank 0 reports and checkpoints
	EnvNumHosts   = "GLEANER_NUM_HOSTS"   // hosts of the run
	EnvLocalNodes = "GLEANER_LOCAL_NODES" // nodes of the run on this host
	EnvNodeOffset = "GLEANER_NODE_OFFSET" // index of this host's first node among the run's GLEANER_NODES
	EnvHostAddr   = "GLEANER_HOST_ADDR"   // this host's address
	EnvMasterAddr = "GLEANER_MASTER_ADDR" // rank 0's host address
	EnvMasterPort = "GLEANER_MASTER_PORT" // a free TCP port on rank 0's host

	// The same facts under the names torch.distributed's env:// reads,
	// torchrun-style: one process per host, so WORLD_SIZE counts hosts and
	// LOCAL_RANK is 0.
	EnvTorchMasterAddr = "MASTER_ADDR"
	EnvTorchMasterPort = "MASTER_PORT"
	EnvTorchWorldSize  = "WORLD_SIZE"
	EnvTorchRank       = "RANK"
	EnvTorchLocalRank  = "LOCAL_RANK"

	// The network interface holding GLEANER_HOST_ADDR, for gloo and NCCL.
	// Only a launcher can know it, so Rendezvous.Vars leaves them out; a
	// launcher sets them unless the user did.
	EnvGlooSocketIfname = "GLOO_SOCKET_IFNAME"
	EnvNCCLSocketIfname = "NCCL_SOCKET_IFNAME"
)

// Report is one line of the report file. Every field is optional, but a
// useful line carries the cumulative samples (or step) and metrics.
type Report struct {
	// Samples is the cumulative number of training samples processed since
	// the trial first started (restored from the checkpoint on resume).
	Samples float64 `json:"samples,omitempty"`
	Step    int64   `json:"step,omitempty"`
	Epoch   float64 `json:"epoch,omitempty"`
	// Metrics are named scalar results (loss, accuracy, ...).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Checkpoint is set once a checkpoint has been completely written: the
	// path to pass back as GLEANER_RESUME_FROM.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Time is the trainer's wall clock in unix seconds (optional; the
	// reader's clock is used when absent).
	Time float64 `json:"time,omitempty"`
	// Model and Batch say what the trainer trains: a model name (at most
	// MaxModelName bytes, e.g. "resnet50") and its per-GPU (local) batch
	// size. The Job Profiling Advisor predicts the trial from profiled
	// curves of the same model, and keeps the trial's measured curve
	// under that name once it ends; a campaign's resources.model and
	// .batch take precedence. A trainer need say it once per run (the
	// latest non-empty value is kept).
	Model string `json:"model,omitempty"`
	Batch int    `json:"batch,omitempty"`
}

// MaxModelName is the longest Report.Model accepted, in bytes.
const MaxModelName = 128

// ErrMalformedReport wraps every report decoding failure.
var ErrMalformedReport = errors.New("malformed report line")

// MaxReportLine is the longest report line accepted, in bytes.
const MaxReportLine = 64 << 10

// ParseReport decodes one report line. Unknown fields are ignored so
// trainers may add their own; values must be finite and non-negative
// where they count something.
func ParseReport(line []byte) (Report, error) {
	var r Report
	if len(line) > MaxReportLine {
		return r, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformedReport, len(line), MaxReportLine)
	}
	trimmed := strings.TrimSpace(string(line))
	if trimmed == "" || trimmed[0] != '{' {
		return r, fmt.Errorf("%w: not a JSON object", ErrMalformedReport)
	}
	// A diverged run's metric is written as null (JSON has no NaN); such
	// metrics are dropped, so no NaN ever reaches workflow state.
	var raw struct {
		Report
		Metrics map[string]*float64 `json:"metrics,omitempty"`
	}
	if err := json.Unmarshal([]byte(trimmed), &raw); err != nil {
		return r, fmt.Errorf("%w: %v", ErrMalformedReport, err)
	}
	r = raw.Report
	switch {
	case !finiteNonNeg(r.Samples):
		return Report{}, fmt.Errorf("%w: samples: %v must be finite and non-negative", ErrMalformedReport, r.Samples)
	case r.Step < 0:
		return Report{}, fmt.Errorf("%w: step: %d must be non-negative", ErrMalformedReport, r.Step)
	case !finiteNonNeg(r.Epoch):
		return Report{}, fmt.Errorf("%w: epoch: %v must be finite and non-negative", ErrMalformedReport, r.Epoch)
	case !finiteNonNeg(r.Time):
		return Report{}, fmt.Errorf("%w: time: %v must be finite and non-negative", ErrMalformedReport, r.Time)
	case r.Batch < 0:
		return Report{}, fmt.Errorf("%w: batch: %d must be non-negative", ErrMalformedReport, r.Batch)
	case len(r.Model) > MaxModelName:
		return Report{}, fmt.Errorf("%w: model: %d bytes, more than %d", ErrMalformedReport, len(r.Model), MaxModelName)
	}
	if len(raw.Metrics) > 0 {
		r.Metrics = make(map[string]float64, len(raw.Metrics))
		for name, v := range raw.Metrics {
			if v != nil {
				r.Metrics[name] = *v
			}
		}
	}
	return r, nil
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
