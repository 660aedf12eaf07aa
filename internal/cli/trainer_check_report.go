package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/activities"
	"github.com/gleaner-hpc/gleaner/trial"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// CheckResult is what `gleaner trainer check` saw and its verdict (its
// --json output).
type CheckResult struct {
	Pass bool `json:"pass"`
	// Verdict is the verdict line: "PASS: …" or "FAIL: " and the reasons.
	Verdict  string         `json:"verdict"`
	Problems []CheckProblem `json:"problems,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`

	Command []string        `json:"command"`
	WorkDir string          `json:"workdir"`
	Params  json.RawMessage `json:"params"`
	Nodes   int             `json:"nodes"`
	// GPUs is how many of the nodes have a GPU of this host (one each).
	GPUs   int     `json:"gpus"`
	Budget float64 `json:"budget"`
	Unit   string  `json:"unit"`
	Grace  string  `json:"grace"`
	// Dir is the trial's directory (checkpoints, runs/<n>/ with each
	// run's report file and log); Removed when it was removed after a PASS.
	Dir     string `json:"dir"`
	Removed bool   `json:"removed,omitempty"`
	// Metrics are the metrics reported, each with its latest value.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Runs    []*CheckRun        `json:"runs"`
}

// CheckProblem is one reason for a FAIL: Reason is short (the verdict
// line's), Detail says what was seen and what the protocol wants.
type CheckProblem struct {
	Run    int    `json:"run,omitempty"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// CheckRun is one run of the trainer.
type CheckRun struct {
	Run     int    `json:"run"`
	Purpose string `json:"purpose"`
	// ResumeFrom is the checkpoint the run was given (GLEANER_RESUME_FROM).
	ResumeFrom string `json:"resume_from,omitempty"`
	ReportFile string `json:"report_file,omitempty"`
	Log        string `json:"log,omitempty"`

	Reports   int             `json:"reports"`
	Malformed []MalformedLine `json:"malformed,omitempty"`
	// First and Last are the first and last reports of progress (counters,
	// metrics or a checkpoint).
	First       *CheckCounters   `json:"first,omitempty"`
	Last        *CheckCounters   `json:"last,omitempty"`
	Checkpoints []CheckpointSeen `json:"checkpoints,omitempty"`
	// Checkpoint is where the worker would resume the trial after this
	// run: the newest reported checkpoint that exists in the checkpoint
	// directory. BadCheckpoints counts reported ones it rejected.
	Checkpoint     string `json:"checkpoint,omitempty"`
	BadCheckpoints int    `json:"bad_checkpoints,omitempty"`
	BadCheckpoint  string `json:"bad_checkpoint,omitempty"`

	StopSent        bool   `json:"stop_sent,omitempty"`
	StoppedByWorker bool   `json:"stopped_by_worker,omitempty"`
	TimedOut        bool   `json:"timed_out,omitempty"`
	StopTook        string `json:"stop_took,omitempty"`
	// StopAt are the counters of the last report before the stop.
	StopAt  *CheckCounters `json:"stop_at,omitempty"`
	Exit    *CheckExit     `json:"exit,omitempty"`
	Error   string         `json:"error,omitempty"`
	Worker  []string       `json:"worker,omitempty"`
	LogTail []string       `json:"log_tail,omitempty"`

	workDir     string
	metrics     map[string]float64
	afterStop   []CheckpointSeen // checkpoints reported after the stop
	resumePoint *CheckCounters   // Checkpoint's counters, when a report names it
	progress    []CheckCounters  // every progress report, in order
}

// CheckCounters are a report's counters (and its line number).
type CheckCounters struct {
	Line    int     `json:"line"`
	Samples float64 `json:"samples"`
	Step    int64   `json:"step"`
	Epoch   float64 `json:"epoch"`
}

// CheckpointSeen is a reported checkpoint with the counters of its line.
type CheckpointSeen struct {
	Path string `json:"path"`
	CheckCounters
}

// MalformedLine is a report line the worker skips.
type MalformedLine struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// CheckExit is how a run's trainer ended.
type CheckExit struct {
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
	Killed bool   `json:"killed,omitempty"`
	Text   string `json:"text"`
}

// finish fills the run from RunTrial's result and the run's files;
// stopOff is the report file's offset when the stop was sent (-1: none).
func (run *CheckRun) finish(res workflows.RunTrialResult, err error, stopOff int64) {
	run.Checkpoint, run.BadCheckpoints, run.BadCheckpoint = res.Checkpoint, res.BadCheckpoints, res.BadCheckpoint
	var app *temporal.ApplicationError
	switch {
	case err == nil, errors.As(err, &app) && app.Type() == activities.ErrTypeTrainerFailed:
		run.Exit = &CheckExit{Code: res.Exit.Code, Signal: res.Exit.Signal, Killed: res.Exit.Killed, Text: describeExit(res.Exit)}
	default: // it never ran: the launch failed
		run.Error = err.Error()
	}
	if run.ReportFile != "" {
		run.readReports(stopOff)
	}
	if run.Log != "" && (run.Exit == nil || !run.Exit.OK()) {
		run.LogTail = logTail(run.Log, 10)
	}
}

// OK reports a clean exit.
func (e *CheckExit) OK() bool { return e != nil && e.Code == 0 && e.Signal == "" }

func describeExit(e gleaner.ExitStatus) string {
	switch {
	case e.Signal != "" && e.Killed:
		return "killed with SIGKILL after the grace period"
	case e.Signal != "":
		return "signal " + e.Signal
	default:
		return fmt.Sprintf("exit %d", e.Code)
	}
}

// readReports reads the run's report file as the worker does, line by
// line through trial.ParseReport, keeping line numbers.
func (run *CheckRun) readReports(stopOff int64) {
	raw, err := os.ReadFile(run.ReportFile)
	if err != nil {
		return
	}
	run.metrics = map[string]float64{}
	var off int64
	for i, line := range bytes.SplitAfter(raw, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		n := i + 1
		off += int64(len(line))
		if line[len(line)-1] != '\n' {
			run.Malformed = append(run.Malformed, MalformedLine{n, "no newline at its end: a worker never reads it"})
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, err := trial.ParseReport(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			run.Malformed = append(run.Malformed, MalformedLine{n, shorten(err.Error(), 160)})
			continue
		}
		run.Reports++
		c := CheckCounters{Line: n, Samples: r.Samples, Step: r.Step, Epoch: r.Epoch}
		if r.Samples == 0 && r.Step == 0 && r.Epoch == 0 && len(r.Metrics) == 0 && r.Checkpoint == "" {
			continue // a line of the trainer's own (a model name alone)
		}
		run.progress = append(run.progress, c)
		if run.First == nil {
			run.First = &c
		}
		run.Last = &c
		if stopOff < 0 || off <= stopOff {
			run.StopAt = &c
		}
		for k, v := range r.Metrics {
			run.metrics[k] = v
		}
		if r.Checkpoint == "" {
			continue
		}
		seen := CheckpointSeen{Path: r.Checkpoint, CheckCounters: c}
		run.Checkpoints = append(run.Checkpoints, seen)
		if stopOff >= 0 && off > stopOff {
			run.afterStop = append(run.afterStop, seen)
		}
		if run.Checkpoint != "" && samePath(run.Checkpoint, r.Checkpoint, run.workDir) {
			run.resumePoint = &c
		}
	}
	if stopOff < 0 {
		run.StopAt = nil
	}
}

// samePath reports whether the worker's resume point is the reported
// path (a relative one is relative to the trainer's working directory),
// with symbolic links resolved.
func samePath(resume, reported, workDir string) bool {
	if !filepath.IsAbs(reported) {
		reported = filepath.Join(workDir, reported)
	}
	if filepath.Clean(resume) == filepath.Clean(reported) {
		return true
	}
	a, errA := filepath.EvalSymlinks(resume)
	b, errB := filepath.EvalSymlinks(reported)
	return errA == nil && errB == nil && a == b
}

// logTail is the last n lines of a file.
func logTail(path string, n int) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = shorten(l, 200)
	}
	return lines
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// counter is c's value in the budget unit.
func counter(c CheckCounters, unit string) float64 {
	switch unit {
	case gleaner.BudgetSteps:
		return float64(c.Step)
	case gleaner.BudgetEpochs:
		return c.Epoch
	}
	return c.Samples
}

// describeCounters writes c's non-zero counters, the budget unit's first.
func describeCounters(c CheckCounters, unit string) string {
	parts := []string{}
	add := func(name, u string, v string, nonzero bool) {
		if u == unit {
			parts = append([]string{name + " " + v}, parts...)
		} else if nonzero {
			parts = append(parts, name+" "+v)
		}
	}
	add("step", gleaner.BudgetSteps, fmt.Sprint(c.Step), c.Step != 0)
	add("samples", gleaner.BudgetSamples, fmt.Sprint(c.Samples), c.Samples != 0)
	add("epoch", gleaner.BudgetEpochs, fmt.Sprintf("%.4g", c.Epoch), c.Epoch != 0)
	return strings.Join(parts, ", ")
}

// atBudget: as the worker counts a budget reached (activities' 1e-9
// relative tolerance, for float counters).
func atBudget(v, budget float64) bool { return v >= budget*(1-1e-9) }

// judge turns the runs into problems, warnings and the verdict.
func (c *checker) judge() {
	res, unit, budget := c.res, c.setup.trial.BudgetUnit, c.setup.trial.Budget
	problem := func(run int, reason, format string, args ...any) {
		res.Problems = append(res.Problems, CheckProblem{Run: run, Reason: reason, Detail: fmt.Sprintf(format, args...)})
	}
	budgetText := fmt.Sprintf("%v %s", budget, unit)
	res.Metrics = map[string]float64{}
	var malformed []string
	nMalformed := 0
	for _, run := range res.Runs {
		for k, v := range run.metrics {
			res.Metrics[k] = v
		}
		for _, m := range run.Malformed {
			nMalformed++
			if len(malformed) < 5 {
				malformed = append(malformed, fmt.Sprintf("run %d line %d: %s", run.Run, m.Line, m.Error))
			}
		}
		if run.BadCheckpoints > 0 {
			problem(run.Run, "a reported checkpoint was rejected",
				"%d reported checkpoint(s) rejected, the last: %s; a checkpoint must exist and lie inside GLEANER_CHECKPOINT_DIR when reported",
				run.BadCheckpoints, run.BadCheckpoint)
		}
		for _, w := range run.Worker {
			res.Warnings = append(res.Warnings, fmt.Sprintf("run %d: the worker says: %s", run.Run, w))
		}
	}
	c.judgeStop(res.Runs[0], problem, budgetText)
	if len(res.Runs) > 1 {
		c.judgeResume(res.Runs[0], res.Runs[1], problem, budgetText)
	}
	if len(res.Runs) > 2 {
		c.judgeAtBudget(res.Runs[1], res.Runs[2], problem, budgetText)
	}
	if nMalformed > 0 {
		more := ""
		if nMalformed > len(malformed) {
			more = fmt.Sprintf("; and %d more", nMalformed-len(malformed))
		}
		problem(0, fmt.Sprintf("%d malformed report line(s)", nMalformed),
			"a worker skips them: %s%s", strings.Join(malformed, "; "), more)
	}
	switch {
	case len(res.Metrics) == 0 && res.Runs[0].Reports > 0:
		res.Warnings = append(res.Warnings, "no report carried metrics: a campaign's objective comes from them")
	case c.setup.metric != "":
		if _, ok := res.Metrics[c.setup.metric]; !ok {
			names := slices.Sorted(maps.Keys(res.Metrics))
			problem(0, "never reported metric "+c.setup.metric,
				"a campaign with objective.metric %s would score none of its trials; reported: %s", c.setup.metric, strings.Join(names, ", "))
		}
	}
	res.Pass = len(res.Problems) == 0
	if res.Pass {
		res.Verdict = "PASS: stops on SIGTERM with a checkpoint, resumes from it exactly, stops at its budget, reports well-formed"
		return
	}
	reasons := make([]string, len(res.Problems))
	for i, p := range res.Problems {
		reasons[i] = p.Reason
	}
	res.Verdict = "FAIL: " + strings.Join(reasons, "; ")
}

type problemFunc func(run int, reason, format string, args ...any)

// judgeStop: run 1 stopped with SIGTERM mid-run checkpoints, reports and
// exits 0 within the grace period.
func (c *checker) judgeStop(run *CheckRun, problem problemFunc, budgetText string) {
	unit := c.setup.trial.BudgetUnit
	switch {
	case run.Error != "":
		problem(1, "could not start", "%s", run.Error)
		return
	case run.TimedOut && !run.StopSent:
		problem(1, "no progress within --timeout",
			"run 1 reported %d progress line(s) in %v, fewer than --stop-after %d and no checkpoint; it was stopped",
			len(run.progress), c.setup.maxTime, c.setup.stopAt)
		return
	case !run.StopSent && !run.Exit.OK():
		problem(1, "failed", "run 1 ended with %s before it was stopped (log: %s)", run.Exit.Text, run.Log)
		return
	case !run.StopSent || (run.StopAt != nil && atBudget(counter(*run.StopAt, unit), c.setup.trial.Budget)):
		// A stop that came once the run was at its budget is no stop mid-run.
		at := "without a progress report"
		if run.Last != nil {
			at = "at " + describeCounters(*run.Last, unit)
		}
		problem(1, "ended before it could be stopped",
			"run 1 reached its end %s before it could be stopped mid-run: the stop and the resume are untested; "+
				"make a run last a few seconds (a larger --budget than %s, or a slower step)", at, budgetText)
		return
	}
	switch {
	case run.Exit.OK() && trainedOnAfterStop(run, unit):
		problem(1, "ignored SIGTERM",
			"after SIGTERM at %s it trained on to %s before it exited 0: on SIGTERM a trainer finishes its step, writes a checkpoint, reports it and exits 0",
			describeCounters(*run.StopAt, unit), describeCounters(*run.Last, unit))
	case run.Exit.Killed:
		problem(1, "ignored SIGTERM",
			"still running %v after SIGTERM, killed with SIGKILL: on SIGTERM a trainer finishes its step, writes a checkpoint, reports it and exits 0 within the grace period (--grace)",
			c.setup.trial.GracePeriod)
	case !run.Exit.OK():
		problem(1, "exit not 0 on SIGTERM", "run 1 ended with %s after SIGTERM; a stopped trainer exits 0 (log: %s)", run.Exit.Text, run.Log)
	}
	if run.Checkpoint == "" {
		problem(1, "no checkpoint",
			"run 1 reported no checkpoint before it ended: a stopped trial would start again from 0; write one into GLEANER_CHECKPOINT_DIR and report its path")
		return
	}
	if len(run.afterStop) == 0 && run.resumePoint != nil && run.Last != nil &&
		counter(*run.resumePoint, unit) < counter(*run.Last, unit) {
		problem(1, "no checkpoint on SIGTERM",
			"its newest checkpoint is at %s, its last report at %s: the work since is lost on every stop; on SIGTERM write a checkpoint and report it",
			describeCounters(*run.resumePoint, unit), describeCounters(*run.Last, unit))
	}
}

// trainedOnAfterStop reports whether the run's reports after the stop
// went on by more than two of its report intervals (the largest step
// between two of its reports): a trainer that finishes its step,
// checkpoints and exits goes on by at most about one.
func trainedOnAfterStop(run *CheckRun, unit string) bool {
	if run.StopAt == nil || run.Last == nil {
		return false
	}
	var interval float64
	for i := 1; i < len(run.progress); i++ {
		interval = max(interval, counter(run.progress[i], unit)-counter(run.progress[i-1], unit))
	}
	return interval > 0 && counter(*run.Last, unit)-counter(*run.StopAt, unit) > 2*interval
}

// judgeResume: run 2, given run 1's checkpoint, continues its counters and
// stops by itself at its budget with a checkpoint there.
func (c *checker) judgeResume(stopped, run *CheckRun, problem problemFunc, budgetText string) {
	unit := c.setup.trial.BudgetUnit
	if run.Error != "" {
		problem(2, "could not start the resumed run", "%s", run.Error)
		return
	}
	if cp := stopped.resumePoint; cp != nil && run.First != nil {
		if back := wentBack(*run.First, *cp, unit); back != "" {
			reason := "resume starts over"
			if stopped.First != nil && counter(*run.First, unit) <= counter(*stopped.First, unit) {
				reason = "resume restarts from 0"
			}
			problem(2, reason,
				"run 2's first report (line %d) is at %s, the checkpoint it was given (GLEANER_RESUME_FROM) at %s: %s; restore the counters from the checkpoint and continue them",
				run.First.Line, describeCounters(*run.First, unit), describeCounters(*cp, unit), back)
		}
	}
	switch {
	case run.Exit != nil && run.Exit.Killed:
		problem(2, "ignored SIGTERM at its budget", "run 2 was stopped and killed after the grace period (log: %s)", run.Log)
		return
	case run.StoppedByWorker:
		past := ""
		if run.Last != nil {
			past = " (to " + describeCounters(*run.Last, unit) + ")"
		}
		problem(2, "trained past its budget",
			"run 2 went on past its budget of %s%s and the worker stopped it with SIGTERM: read GLEANER_BUDGET and GLEANER_BUDGET_UNIT, stop when the counter reaches it, checkpoint, report and exit 0",
			budgetText, past)
		return
	case run.TimedOut:
		problem(2, "did not reach its budget within --timeout", "run 2 was still running after %v and was stopped", c.setup.maxTime)
		return
	case !run.Exit.OK():
		problem(2, "resumed run failed", "run 2 ended with %s (log: %s)", run.Exit.Text, run.Log)
		return
	case run.Last == nil || !atBudget(counter(*run.Last, unit), c.setup.trial.Budget):
		at := "with no progress report"
		if run.Last != nil {
			at = "at " + describeCounters(*run.Last, unit)
		}
		problem(2, "ended before its budget",
			"run 2 exited 0 %s, short of its budget of %s: with GLEANER_BUDGET set, the budget, not the trainer's own length, says where a run ends",
			at, budgetText)
		return
	case run.resumePoint == nil || !atBudget(counter(*run.resumePoint, unit), c.setup.trial.Budget):
		problem(2, "no checkpoint at its budget",
			"run 2 ended at its budget without reporting a checkpoint there: a later run (an ASHA promotion, a PBT exploit) could not continue it")
	}
}

// wentBack says how first's counters fall short of the checkpoint's, ""
// when they do not. The budget unit's counter always counts; the others
// only where the report carries them (an absent counter reads 0).
func wentBack(first, cp CheckCounters, unit string) string {
	var why []string
	if u := gleaner.BudgetSteps; (unit == u || first.Step > 0) && first.Step < cp.Step {
		why = append(why, fmt.Sprintf("step %d < %d", first.Step, cp.Step))
	}
	if u := gleaner.BudgetSamples; (unit == u || first.Samples > 0) && first.Samples < cp.Samples {
		why = append(why, fmt.Sprintf("samples %v < %v", first.Samples, cp.Samples))
	}
	if u := gleaner.BudgetEpochs; (unit == u || first.Epoch > 0) && first.Epoch < cp.Epoch*(1-1e-9) {
		why = append(why, fmt.Sprintf("epoch %.4g < %.4g", first.Epoch, cp.Epoch))
	}
	return strings.Join(why, ", ")
}

// judgeAtBudget: run 3, given a checkpoint at its budget, trains nothing,
// reports a checkpoint and exits 0.
func (c *checker) judgeAtBudget(prev, run *CheckRun, problem problemFunc, budgetText string) {
	unit := c.setup.trial.BudgetUnit
	cp := prev.resumePoint
	switch {
	case run.Error != "":
		problem(3, "could not start the run at its budget", "%s", run.Error)
	case run.StoppedByWorker || (cp != nil && trainedFrom(run, *cp, unit)):
		from := ""
		if run.First != nil {
			from = fmt.Sprintf(" reported %s to %s", describeCounters(*run.First, unit), describeCounters(*run.Last, unit))
		}
		problem(3, "trains from a checkpoint at its budget",
			"given a checkpoint already at its budget of %s (%s), run 3%s: it should train nothing, report a checkpoint at those counters and exit 0",
			budgetText, describeCounters(*cp, unit), from)
	case run.TimedOut:
		problem(3, "a run at its budget did not end", "run 3 was still running after %v and was stopped", c.setup.maxTime)
	case !run.Exit.OK():
		problem(3, "failed at its budget", "given a checkpoint already at its budget, run 3 ended with %s (log: %s)", run.Exit.Text, run.Log)
	case len(run.Checkpoints) == 0:
		problem(3, "no checkpoint at its budget on resume",
			"given a checkpoint already at its budget, run 3 exited 0 without reporting a checkpoint: report one at those counters (its counters are the trial's progress)")
	}
}

// trainedFrom reports whether any of the run's reports has counters other
// than the checkpoint's (in the budget unit).
func trainedFrom(run *CheckRun, cp CheckCounters, unit string) bool {
	for _, c := range run.progress {
		if counter(c, unit) != counter(cp, unit) {
			return true
		}
	}
	return false
}

// budgetEnd: the run ended at its budget with a checkpoint there.
func (run *CheckRun) budgetEnd(unit string, budget float64) bool {
	return run.Exit.OK() && !run.StoppedByWorker && run.resumePoint != nil && atBudget(counter(*run.resumePoint, unit), budget)
}

// stopTookText formats how long a stop took.
func stopTookText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.Round(10 * time.Millisecond).String()
}
