package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner"
)

// Options say where Gleaner's workflows run. The zero value suits a local
// dev server.
type Options struct {
	// TaskQueue is where campaigns are started (default gleaner.TaskQueue,
	// "gleaner"); a Gleaner worker must poll it.
	TaskQueue string
	// UIBase is the Temporal web UI's address, for links (default
	// http://localhost:8233); "-" means there is no UI: links are "".
	UIBase string
	// Namespace is the Temporal client's namespace (default "default"),
	// for links and for the history reads the client makes itself: set it
	// to the namespace the client was dialled with (Connection.Client
	// does).
	Namespace string
	// DataConverter decodes the payloads the client reads from histories:
	// the Temporal client's own (client.Connection.DataConverter; default
	// Temporal's default, which cannot read encrypted payloads).
	DataConverter converter.DataConverter
}

func (o Options) withDefaults() Options {
	if o.TaskQueue == "" {
		o.TaskQueue = gleaner.TaskQueue
	}
	if o.UIBase == "" {
		o.UIBase = "http://localhost:8233"
	}
	o.UIBase = strings.TrimRight(o.UIBase, "/")
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.DataConverter == nil {
		o.DataConverter = converter.GetDefaultDataConverter()
	}
	return o
}

// Client submits and steers campaigns.
type Client struct {
	tc   tclient.Client
	opts Options
}

// New wraps a Temporal client. Connection.Dial makes one (address,
// namespace, TLS or mTLS, API key); so does go.temporal.io's client.Dial.
// The Client does not own tc: close it yourself.
func New(tc tclient.Client, opts Options) *Client {
	return &Client{tc: tc, opts: opts.withDefaults()}
}

// Temporal returns the underlying Temporal client.
func (c *Client) Temporal() tclient.Client { return c.tc }

// Errors, for errors.Is.
var (
	// ErrNotFound: no campaign (or pool) of that name.
	ErrNotFound = errors.New("not found")
	// ErrExists: a campaign of that name exists already (running or ended:
	// names are never reused).
	ErrExists = errors.New("already exists")
	// ErrInvalidSpec: Submit was given a spec that does not validate;
	// nothing was started.
	ErrInvalidSpec = errors.New("invalid campaign spec")
	// ErrRejected: the campaign refused a Pause, Resume or Stop in its
	// current state (already paused, not paused, already ended, …).
	ErrRejected = errors.New("rejected")
	// ErrInvalidName: a campaign or pool name that gleaner.ValidateName
	// rejects; the error names the field, and the server was not asked.
	ErrInvalidName = errors.New("invalid name")
)

// checkName is gleaner.ValidateName as an ErrInvalidName; field is
// "campaign" or "pool".
func checkName(field, name string) error {
	if err := gleaner.ValidateName(field, name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidName, err)
	}
	return nil
}

// Campaign identifies a submitted campaign.
type Campaign struct {
	Name       string `json:"name"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// UIURL opens the campaign in the Temporal web UI.
	UIURL string `json:"ui_url,omitempty"`
}

// Submit validates spec (after its defaults) and starts the campaign. An
// invalid spec (its name and pool included: gleaner.ValidateName) is an
// ErrInvalidSpec naming the field, and nothing is started; a name in use (by a running or an ended campaign) is ErrExists.
func (c *Client) Submit(ctx context.Context, spec gleaner.CampaignSpec) (Campaign, error) {
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return Campaign{}, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	spec = spec.WithTrialMode() // trial.mode auto decides here, once
	id := gleaner.CampaignWorkflowID(spec.Name)
	run, err := c.tc.ExecuteWorkflow(ctx, tclient.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                c.opts.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Without this the SDK answers a duplicate with the existing run.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            fmt.Sprintf("%s campaign %s: %d trials, %s %s", spec.Kind, spec.Name, spec.Budget.MaxTrials, spec.Objective.Mode, spec.Objective.Metric),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(gleaner.SearchAttrCampaign).ValueSet(spec.Name),
			temporal.NewSearchAttributeKeyKeyword(gleaner.SearchAttrKind).ValueSet(gleaner.KindCampaign),
		),
	}, gleaner.CampaignWorkflowName, gleaner.CampaignInput{Spec: spec})
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return Campaign{}, fmt.Errorf("campaign %q: %w (names are unique; pick another)", spec.Name, ErrExists)
		}
		return Campaign{}, fmt.Errorf("starting campaign %q: %w", spec.Name, err)
	}
	return Campaign{Name: spec.Name, WorkflowID: id, RunID: run.GetRunID(), UIURL: c.WorkflowURL(id)}, nil
}

// WorkflowURL is the web UI's page of a workflow, or "" with UIBase "-".
func (c *Client) WorkflowURL(workflowID string) string {
	if c.opts.UIBase == "-" {
		return ""
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", c.opts.UIBase, url.PathEscape(c.opts.Namespace), url.PathEscape(workflowID))
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// query runs a query on the latest run of a workflow; what names it in
// errors ("campaign \"x\"").
func (c *Client) query(ctx context.Context, workflowID, what, query string, out any) error {
	v, err := c.tc.QueryWorkflow(ctx, workflowID, "", query)
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		return fmt.Errorf("querying %s: %w", what, err)
	}
	if err := v.Get(out); err != nil {
		return fmt.Errorf("querying %s: %w", what, err)
	}
	return nil
}

// Status is the campaign's progress: counts, best so far, state. A query
// is answered by a worker, also once the campaign has ended.
func (c *Client) Status(ctx context.Context, name string) (gleaner.CampaignStatus, error) {
	var s gleaner.CampaignStatus
	if err := checkName("campaign", name); err != nil {
		return s, err
	}
	err := c.patientQuery(ctx, name, gleaner.QueryStatus, &s, func(snap gleaner.CampaignSnapshot) { s = snap.Status })
	return s, err
}

// QueryPatience is how long Status, Leaderboard and TrialsNewest wait for
// an inline campaign (spec trial.inline) to answer a query before they use
// what it keeps outside its workflow tasks: the snapshot in its memo
// (gleaner.CampaignSnapshot, at most gleaner.InlineCountsEvery old;
// CampaignStatus.AsOf says when) or its records chunks. Such a campaign
// ends trials in most of its workflow tasks, and a query waits for the
// task in hand; the memo is read meanwhile, so a command takes about
// QueryPatience at worst. Zero or less: no query when there is a
// snapshot (for trials, the chunks alone).
var QueryPatience = 400 * time.Millisecond

// patientQuery queries a campaign and, when the query has not answered
// within half of QueryPatience, also reads the snapshot in its memo; when
// the query takes longer than QueryPatience and there is a snapshot, it
// answers from that (fromSnapshot), else it goes on waiting for the query.
func (c *Client) patientQuery(ctx context.Context, name, query string, out any, fromSnapshot func(gleaner.CampaignSnapshot)) error {
	id, what := gleaner.CampaignWorkflowID(name), fmt.Sprintf("campaign %q", name)
	if QueryPatience <= 0 {
		if snap := c.memoSnapshot(ctx, id); snap != nil {
			fromSnapshot(*snap)
			return nil
		}
		return c.query(ctx, id, what, query, out)
	}
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queried := make(chan error, 1)
	go func() { queried <- c.query(qctx, id, what, query, out) }()
	// A query answered within half the patience costs no memo read.
	half := time.NewTimer(QueryPatience / 2)
	defer half.Stop()
	select {
	case err := <-queried:
		return err
	case <-half.C:
	}
	snapshot := make(chan *gleaner.CampaignSnapshot, 1)
	go func() { snapshot <- c.memoSnapshot(qctx, id) }()
	patience := time.NewTimer(QueryPatience - QueryPatience/2)
	defer patience.Stop()
	select {
	case err := <-queried:
		return err
	case <-patience.C:
	}
	select {
	case err := <-queried:
		return err
	case snap := <-snapshot:
		if snap == nil { // none, or unreadable: the query it is
			return <-queried
		}
		select {
		case err := <-queried:
			if err == nil {
				return nil // an answer that came meanwhile is fresher
			}
		default:
			cancel()
			<-queried // out is written by one goroutine only
		}
		fromSnapshot(*snap)
		return nil
	}
}

// memoSnapshot reads the snapshot an inline campaign keeps in its memo;
// nil when there is none or it cannot be read.
func (c *Client) memoSnapshot(ctx context.Context, id string) *gleaner.CampaignSnapshot {
	d, err := c.tc.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil
	}
	p := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[gleaner.MemoSnapshot]
	var snap gleaner.CampaignSnapshot
	if p == nil || c.opts.DataConverter.FromPayload(p, &snap) != nil {
		return nil
	}
	return &snap
}

// Leaderboard is the campaign's trials that reported the objective, best
// first (at most gleaner.LeaderboardSize).
func (c *Client) Leaderboard(ctx context.Context, name string) ([]gleaner.LeaderboardEntry, error) {
	var l []gleaner.LeaderboardEntry
	if err := checkName("campaign", name); err != nil {
		return nil, err
	}
	err := c.patientQuery(ctx, name, gleaner.QueryLeaderboard, &l, func(snap gleaner.CampaignSnapshot) { l = snap.Leaderboard })
	return l, err
}

// Trials is the state of every trial the campaign has started, by trial
// id, whichever way it runs them (a workflow per trial, or inline): see
// listTrials. It waits for a busy inline campaign's answer as long as ctx
// allows.
func (c *Client) Trials(ctx context.Context, name string) ([]gleaner.TrialStatus, error) {
	l, err := c.listTrials(ctx, name, trialSelect{patient: true})
	return l.Trials, err
}

// latestSegments keeps, of the workflow ids of a trial's segments
// (gleaner.TrialSegmentWorkflowID: "…-trial-00007", "…-trial-00007.2",
// …), the latest one's: a trial continued by its searcher is one trial.
func latestSegments(ids []string) []string {
	seg := func(id string) (string, int) {
		i := strings.LastIndexByte(id, '.')
		if i < 0 {
			return id, 1
		}
		n, err := strconv.Atoi(id[i+1:])
		if err != nil || n < 2 {
			return id, 1
		}
		return id[:i], n
	}
	latest := map[string]int{}
	for _, id := range ids {
		base, n := seg(id)
		latest[base] = max(latest[base], n)
	}
	var out []string
	for _, id := range ids {
		if base, n := seg(id); latest[base] == n {
			out = append(out, id)
		}
	}
	return out
}

// trialFromResult is an ended trial's status as its result tells it.
func (c *Client) trialFromResult(ctx context.Context, workflowID string) (gleaner.TrialStatus, error) {
	var r gleaner.TrialReport
	if err := c.tc.GetWorkflow(ctx, workflowID, "").Get(ctx, &r); err != nil {
		failed, ok := gleaner.FailedTrialReport(err)
		if !ok {
			return gleaner.TrialStatus{}, fmt.Errorf("reading the result of trial %s: %w", workflowID, err)
		}
		r = failed
	}
	// The result says only whether the objective was missing at the end
	// (and nothing for trials older than that flag): seen unless it was.
	return gleaner.TrialStatus{TrialID: r.TrialID, Params: r.Params, TrialProgress: gleaner.TrialProgress{
		State: r.State, Samples: r.Samples, Metrics: r.Metrics, Restarts: r.Restarts, Rescales: r.Rescales, Error: r.Error,
		ObjectiveSeen: !r.ObjectiveMissing,
	}}, nil
}

// describe returns the latest run of a campaign's workflow, or ErrNotFound.
func (c *Client) describe(ctx context.Context, name string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	d, err := c.tc.DescribeWorkflowExecution(ctx, gleaner.CampaignWorkflowID(name), "")
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("campaign %q: %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("describing campaign %q: %w", name, err)
	}
	return d, nil
}

// rejectedError is a refused Pause, Resume or Stop: errors.Is(err,
// ErrRejected), with the campaign's reason as the message.
type rejectedError struct {
	reason string
	cause  error
}

func (e *rejectedError) Error() string        { return "rejected: " + e.reason }
func (e *rejectedError) Is(target error) bool { return target == ErrRejected }
func (e *rejectedError) Unwrap() error        { return e.cause }

// control sends a pause, resume or stop update (verb names it in errors)
// and returns the status after.
func (c *Client) control(ctx context.Context, name, verb, update, reason string) (gleaner.CampaignStatus, error) {
	if err := checkName("campaign", name); err != nil {
		return gleaner.CampaignStatus{}, fmt.Errorf("%s: %w", verb, err)
	}
	h, err := c.tc.UpdateWorkflow(ctx, tclient.UpdateWorkflowOptions{
		WorkflowID:   gleaner.CampaignWorkflowID(name),
		UpdateName:   update,
		Args:         []any{gleaner.ControlRequest{Reason: reason}},
		WaitForStage: tclient.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		var s gleaner.CampaignStatus
		if err = h.Get(ctx, &s); err == nil {
			return s, nil
		}
	}
	var app *temporal.ApplicationError
	switch {
	case errors.As(err, &app):
		// The campaign's validator refused: its message says why.
		return gleaner.CampaignStatus{}, fmt.Errorf("%s campaign %q: %w", verb, name, &rejectedError{reason: app.Message(), cause: err})
	case isNotFound(err):
		// Updates find no ended workflow: say which of the two it is.
		d, derr := c.describe(ctx, name)
		if derr != nil {
			return gleaner.CampaignStatus{}, fmt.Errorf("%s: %w", verb, derr)
		}
		if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			// The campaign's own state says more than its workflow's.
			state := "its workflow is " + strings.ToLower(st.String())
			if s, serr := c.Status(ctx, name); serr == nil {
				state = "it is " + string(s.State)
			}
			why := fmt.Sprintf("campaign %s has already ended: %s", name, state)
			return gleaner.CampaignStatus{}, fmt.Errorf("%s campaign %q: %w", verb, name, &rejectedError{reason: why, cause: err})
		}
	}
	return gleaner.CampaignStatus{}, fmt.Errorf("%s campaign %q: %w", verb, name, err)
}

// Pause stops creating trials and pauses the running ones at a checkpoint
// (they give their nodes back). reason is shown in the status and the UI.
// A campaign that is not running refuses with ErrRejected.
func (c *Client) Pause(ctx context.Context, name, reason string) (gleaner.CampaignStatus, error) {
	return c.control(ctx, name, "pause", gleaner.UpdatePause, reason)
}

// Resume undoes Pause; a campaign that is not paused refuses with
// ErrRejected.
func (c *Client) Resume(ctx context.Context, name, reason string) (gleaner.CampaignStatus, error) {
	return c.control(ctx, name, "resume", gleaner.UpdateResume, reason)
}

// Stop stops every trial at a checkpoint and ends the campaign as stopped
// once they have reported (Wait returns then). The returned status is
// "stopping"; an ended campaign refuses with ErrRejected.
func (c *Client) Stop(ctx context.Context, name, reason string) (gleaner.CampaignStatus, error) {
	return c.control(ctx, name, "stop", gleaner.UpdateStop, reason)
}

// Wait blocks until the campaign ends (following continue-as-new) and
// returns its result. A campaign that failed (budget.max_failures reached,
// or its workflow ended from outside) returns its result and a
// *FailedError naming its newest failed trials.
func (c *Client) Wait(ctx context.Context, name string) (gleaner.CampaignResult, error) {
	var res gleaner.CampaignResult
	if err := checkName("campaign", name); err != nil {
		return res, err
	}
	err := c.tc.GetWorkflow(ctx, gleaner.CampaignWorkflowID(name), "").Get(ctx, &res)
	if err != nil {
		if isNotFound(err) {
			return res, fmt.Errorf("campaign %q: %w", name, ErrNotFound)
		}
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.HasDetails() {
			_ = app.Details(&res)
		}
		var ended *temporal.WorkflowExecutionError
		if ctx.Err() == nil && errors.As(err, &ended) {
			return res, c.failure(ctx, name, res, err) // client/failures.go
		}
		return res, fmt.Errorf("campaign %q: %w", name, err)
	}
	return res, nil
}

// Progress is one observation of a watched campaign.
type Progress struct {
	Status gleaner.CampaignStatus
	Pool   *gleaner.PoolStatus // nil if the pool could not be read
	Err    error               // a query failed (the watch goes on)
}

// Done reports whether the campaign has ended.
func (p Progress) Done() bool {
	switch p.Status.State {
	case gleaner.CampaignCompleted, gleaner.CampaignStopped, gleaner.CampaignFailed:
		return true
	}
	return false
}

// Watch sends the campaign's status (and its pool's) at once and then
// every `every` (default 2s) until the campaign has ended (the last value
// is Done), is not found or has an invalid name (the last value's Err is
// ErrNotFound or ErrInvalidName) or ctx is
// done; then it closes the channel. Other query errors are sent and the
// watch goes on, backing off while they last (watchRetryDelay: up to 10s
// between queries). Read until the channel closes, or cancel ctx.
func (c *Client) Watch(ctx context.Context, name string, every time.Duration) <-chan Progress {
	if every <= 0 {
		every = 2 * time.Second
	}
	out := make(chan Progress)
	go func() {
		defer close(out)
		t := time.NewTimer(every)
		defer t.Stop()
		pool := ""
		failures := 0
		for {
			start := time.Now()
			var p Progress
			p.Status, p.Err = c.Status(ctx, name)
			if p.Err == nil {
				if pool == "" {
					pool = c.poolOf(ctx, name)
				}
				if ps, err := c.PoolStatus(ctx, pool); err == nil {
					p.Pool = &ps
				}
			}
			select {
			case out <- p:
			case <-ctx.Done():
				return
			}
			if p.Done() || errors.Is(p.Err, ErrNotFound) || errors.Is(p.Err, ErrInvalidName) {
				return
			}
			delay := every
			if p.Err != nil {
				failures++
				delay = watchRetryDelay(every, failures)
			} else {
				failures = 0
			}
			// The next query starts delay after this one started.
			t.Reset(max(0, delay-time.Since(start)))
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// watchRetryDelay is how long Watch waits after its failures-th query
// failure in a row (failures ≥ 1) before it queries again: `every` after
// the first, then twice as long each time, up to 10s (or `every` when that
// is longer), so that a server that is down is asked less often, and one
// that comes back is asked again within 10s of the last failure.
func watchRetryDelay(every time.Duration, failures int) time.Duration {
	limit := max(every, 10*time.Second)
	d := every
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// poolOf is the pool a campaign runs in (from its start input), "default"
// when it cannot be read.
func (c *Client) poolOf(ctx context.Context, name string) string {
	var in gleaner.CampaignInput
	if err := c.startInput(ctx, gleaner.CampaignWorkflowID(name), &in); err != nil || in.Spec.Pool == "" {
		return "default"
	}
	return in.Spec.Pool
}

// PoolStatus is a pool's nodes, trials and last allocation.
func (c *Client) PoolStatus(ctx context.Context, pool string) (gleaner.PoolStatus, error) {
	var s gleaner.PoolStatus
	if err := checkName("pool", pool); err != nil {
		return s, err
	}
	err := c.query(ctx, gleaner.PoolWorkflowID(pool), fmt.Sprintf("pool %q", pool), gleaner.QueryStatus, &s)
	return s, err
}

// PoolLibrary is the curves a pool learned from the trials that left it
// (gleaner.QueryLibrary).
func (c *Client) PoolLibrary(ctx context.Context, pool string) (gleaner.PoolLibrary, error) {
	var l gleaner.PoolLibrary
	if err := checkName("pool", pool); err != nil {
		return l, err
	}
	err := c.query(ctx, gleaner.PoolWorkflowID(pool), fmt.Sprintf("pool %q", pool), gleaner.QueryLibrary, &l)
	return l, err
}

// startInput decodes the input of a workflow's latest run.
func (c *Client) startInput(ctx context.Context, workflowID string, out any) error {
	// One event, not the first page: a busy campaign's run holds thousands.
	resp, err := c.tc.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace: c.opts.Namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID}, MaximumPageSize: 1,
	})
	switch {
	case isNotFound(err):
		return fmt.Errorf("%s: %w", workflowID, ErrNotFound)
	case err != nil:
		return fmt.Errorf("reading the history of %s: %w", workflowID, err)
	case len(resp.GetHistory().GetEvents()) == 0:
		return fmt.Errorf("%s: %w", workflowID, ErrNotFound)
	}
	e := resp.GetHistory().GetEvents()[0]
	attrs := e.GetWorkflowExecutionStartedEventAttributes()
	if attrs == nil {
		return fmt.Errorf("%s: first event is %s", workflowID, e.GetEventType())
	}
	return c.opts.DataConverter.FromPayloads(attrs.GetInput(), out)
}

// Spec returns the spec a campaign runs with (its defaults applied).
func (c *Client) Spec(ctx context.Context, name string) (gleaner.CampaignSpec, error) {
	var in gleaner.CampaignInput
	if err := checkName("campaign", name); err != nil {
		return gleaner.CampaignSpec{}, err
	}
	if err := c.startInput(ctx, gleaner.CampaignWorkflowID(name), &in); err != nil {
		return gleaner.CampaignSpec{}, fmt.Errorf("campaign %q: %w", name, err)
	}
	return in.Spec, nil
}
