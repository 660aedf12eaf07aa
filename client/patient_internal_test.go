package client

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/grpc"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// busyCampaign is a campaign whose queries answer only when release is
// closed (or never, when it is nil), with snap in its memo (none when nil).
type busyCampaign struct {
	tclient.Client
	release   chan struct{}
	answer    workflows.CampaignStatus
	snap      *workflows.CampaignSnapshot
	described chan struct{} // closed at the first memo read
	describes atomic.Int32
}

func (b *busyCampaign) QueryWorkflow(ctx context.Context, _, _, _ string, _ ...any) (converter.EncodedValue, error) {
	if b.release == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return answerWhen(ctx, b.release, b.answer)
}

// answerWhen answers a query with v once ready is closed, unless ctx ends
// first.
func answerWhen(ctx context.Context, ready <-chan struct{}, v any) (converter.EncodedValue, error) {
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads(v)
	if err != nil {
		return nil, err
	}
	return tclient.NewValue(p), nil
}

func (b *busyCampaign) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if b.describes.Add(1) == 1 && b.described != nil {
		close(b.described)
	}
	info := &workflowpb.WorkflowExecutionInfo{}
	if b.snap != nil {
		p, err := converter.GetDefaultDataConverter().ToPayload(*b.snap)
		if err != nil {
			return nil, err
		}
		info.Memo = &commonpb.Memo{Fields: map[string]*commonpb.Payload{workflows.MemoSnapshot: p}}
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: info}, nil
}

func withPatience(t *testing.T, d time.Duration) {
	old := QueryPatience
	QueryPatience = d
	t.Cleanup(func() { QueryPatience = old })
}

// A campaign too busy to answer within QueryPatience is read from its
// memo snapshot, which says when it was taken.
func TestStatusOfABusyCampaignComesFromItsSnapshot(t *testing.T) {
	withPatience(t, 20*time.Millisecond)
	asOf := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	fake := &busyCampaign{snap: &workflows.CampaignSnapshot{Status: workflows.CampaignStatus{Running: 7, AsOf: asOf}}}
	s, err := New(fake, Options{}).Status(t.Context(), "c")
	require.NoError(t, err)
	require.Equal(t, 7, s.Running)
	require.True(t, s.AsOf.Equal(asOf), "AsOf %v", s.AsOf)
}

// Without a snapshot the query is all there is: the call waits for it,
// past QueryPatience, and returns its answer.
func TestStatusWithoutSnapshotWaitsForTheQuery(t *testing.T) {
	withPatience(t, 20*time.Millisecond)
	fake := &busyCampaign{release: make(chan struct{}), answer: workflows.CampaignStatus{Running: 3}, described: make(chan struct{})}
	go func() {
		<-fake.described // the memo was read (and had nothing) before the answer
		close(fake.release)
	}()
	s, err := New(fake, Options{}).Status(t.Context(), "c")
	require.NoError(t, err)
	require.Equal(t, 3, s.Running)
	require.True(t, s.AsOf.IsZero(), "the answer is the query's, not a snapshot's")
}

// A campaign that answers at once costs no memo read.
func TestStatusOfAnIdleCampaignReadsNoMemo(t *testing.T) {
	withPatience(t, time.Minute)
	release := make(chan struct{})
	close(release)
	fake := &busyCampaign{release: release, answer: workflows.CampaignStatus{Running: 5}}
	s, err := New(fake, Options{}).Status(t.Context(), "c")
	require.NoError(t, err)
	require.Equal(t, 5, s.Running)
	require.Zero(t, fake.describes.Load())
}

// With no patience at all, the snapshot answers and no query is sent.
func TestStatusWithZeroPatienceReadsOnlyTheSnapshot(t *testing.T) {
	withPatience(t, 0)
	fake := &busyCampaign{snap: &workflows.CampaignSnapshot{Status: workflows.CampaignStatus{Running: 9}}}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := New(fake, Options{}).Status(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, 9, s.Running)
}

// busyInlineCampaign is an inline campaign with one records chunk whose
// server reads its spec only after the campaign has been asked for its
// in-flight trials, and whose campaign never answers that question.
type busyInlineCampaign struct {
	tclient.Client
	asked chan struct{} // closed when the campaign is queried
	chunk workflows.TrialRecords
	// noChunk: the campaign has written no records chunk yet; its query
	// answers live after answerAfter.
	noChunk     bool
	live        []workflows.TrialStatus
	answerAfter time.Duration
}

func (b *busyInlineCampaign) QueryWorkflow(ctx context.Context, _, _, _ string, _ ...any) (converter.EncodedValue, error) {
	close(b.asked)
	if !b.noChunk {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ready := make(chan struct{})
	time.AfterFunc(b.answerAfter, func() { close(ready) })
	return answerWhen(ctx, ready, b.live)
}

func (b *busyInlineCampaign) WorkflowService() workflowservice.WorkflowServiceClient {
	return slowHistory{b: b}
}

func (b *busyInlineCampaign) ListWorkflow(context.Context, *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	if b.noChunk {
		return &workflowservice.ListWorkflowExecutionsResponse{}, nil
	}
	id := workflows.TrialRecordsWorkflowID(workflows.CampaignWorkflowID("c"), 1)
	return &workflowservice.ListWorkflowExecutionsResponse{Executions: []*workflowpb.WorkflowExecutionInfo{
		{Execution: &commonpb.WorkflowExecution{WorkflowId: id}},
	}}, nil
}

func (b *busyInlineCampaign) GetWorkflow(context.Context, string, string) tclient.WorkflowRun {
	return chunkRun{b.chunk}
}

// slowHistory serves the campaign's first event once it has been asked.
type slowHistory struct {
	workflowservice.WorkflowServiceClient
	b *busyInlineCampaign
}

func (s slowHistory) GetWorkflowExecutionHistory(ctx context.Context, _ *workflowservice.GetWorkflowExecutionHistoryRequest, _ ...grpc.CallOption) (*workflowservice.GetWorkflowExecutionHistoryResponse, error) {
	if !s.b.noChunk {
		select {
		case <-s.b.asked:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var spec gleaner.CampaignSpec
	spec.Trial.Inline = true
	p, err := converter.GetDefaultDataConverter().ToPayloads(workflows.CampaignInput{Spec: spec})
	if err != nil {
		return nil, err
	}
	return &workflowservice.GetWorkflowExecutionHistoryResponse{History: &historypb.History{Events: []*historypb.HistoryEvent{{
		EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
			WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{Input: p},
		},
	}}}}, nil
}

// chunkRun is a closed TrialRecords run.
type chunkRun struct{ recs workflows.TrialRecords }

func (chunkRun) GetID() string    { return "" }
func (chunkRun) GetRunID() string { return "" }
func (r chunkRun) Get(_ context.Context, out any) error {
	p, err := converter.GetDefaultDataConverter().ToPayload(r.recs)
	if err != nil {
		return err
	}
	return converter.GetDefaultDataConverter().FromPayload(p, out)
}
func (r chunkRun) GetWithOptions(ctx context.Context, out any, _ tclient.WorkflowRunGetOptions) error {
	return r.Get(ctx, out)
}

// trials asks a busy inline campaign for its in-flight trials while its
// spec is read and its chunks listed: on a loaded server the reads and the
// patience must not add up. Here the spec is served only once the
// campaign has been asked; the chunk's trials come back, marked Busy.
func TestTrialsOfABusyInlineCampaignAskWhileTheSpecIsRead(t *testing.T) {
	withPatience(t, 20*time.Millisecond)
	fake := &busyInlineCampaign{asked: make(chan struct{}), chunk: workflows.TrialRecords{Campaign: "c", Chunk: 1,
		Trials: []workflows.TrialStatus{{TrialID: "t00001"}, {TrialID: "t00002"}}}}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l, err := New(fake, Options{}).TrialsNewest(ctx, "c", 1000)
	require.NoError(t, err)
	require.True(t, l.Busy)
	require.Len(t, l.Trials, 2)
	require.Equal(t, "t00002", l.Trials[1].TrialID)
}

// A busy inline campaign that has written no records chunk yet has all
// its trials in its answer: trials waits for it past QueryPatience rather
// than list nothing (it listed nothing while status counted 103 ended),
// and the answer is listed (it was dropped: read into a copy).
func TestTrialsOfABusyInlineCampaignWithoutChunksWaitForItsAnswer(t *testing.T) {
	for _, patience := range []time.Duration{20 * time.Millisecond, 0} {
		withPatience(t, patience)
		fake := &busyInlineCampaign{asked: make(chan struct{}), noChunk: true, answerAfter: 200 * time.Millisecond,
			live: []workflows.TrialStatus{{TrialID: "t00001"}, {TrialID: "t00002"}, {TrialID: "t00003"}}}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		l, err := New(fake, Options{}).TrialsNewest(ctx, "c", 1000)
		cancel()
		require.NoError(t, err)
		require.False(t, l.Busy, "patience %s", patience)
		require.Len(t, l.Trials, 3, "patience %s", patience)
	}
}
