package client

import (
	"context"
	"fmt"
	"strings"
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

// laggingVisibility is a campaign of 12 trials, t00010–t00012 in flight,
// whose server's search lists only the first 9 trial workflows yet.
type laggingVisibility struct {
	tclient.Client
}

var lagCampaign = workflows.CampaignWorkflowID("lag")

func (laggingVisibility) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	var resp workflowservice.ListWorkflowExecutionsResponse
	if strings.Contains(req.GetQuery(), workflows.WorkflowKindTrial) {
		for n := 1; n <= 9; n++ {
			resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{
				Execution: &commonpb.WorkflowExecution{WorkflowId: workflows.TrialWorkflowID(lagCampaign, n)},
				Status:    enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED})
		}
	}
	return &resp, nil
}

func (laggingVisibility) QueryWorkflow(_ context.Context, id, _, query string, _ ...any) (converter.EncodedValue, error) {
	var answer any
	switch {
	case id == lagCampaign && query == workflows.QueryStatus:
		s := workflows.CampaignStatus{Campaign: "lag", State: workflows.CampaignRunning, Running: 3, MaxTrials: 12}
		s.Created = 12
		for n := 10; n <= 12; n++ {
			s.Trials = append(s.Trials, workflows.TrialBrief{TrialID: fmt.Sprintf("t%05d", n),
				WorkflowID: workflows.TrialWorkflowID(lagCampaign, n), State: workflows.TrialRunning})
		}
		answer = s
	case id == lagCampaign:
		answer = []workflows.TrialStatus(nil)
	default:
		n := 0
		fmt.Sscanf(id[strings.LastIndexByte(id, '-')+1:], "%d", &n)
		state := workflows.TrialCompleted
		if n >= 10 {
			state = workflows.TrialRunning
		}
		answer = workflows.TrialStatus{TrialID: fmt.Sprintf("t%05d", n), TrialProgress: workflows.TrialProgress{State: state}}
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads(answer)
	if err != nil {
		return nil, err
	}
	return tclient.NewValue(p), nil
}

func (laggingVisibility) WorkflowService() workflowservice.WorkflowServiceClient {
	return specHistory{}
}

// specHistory serves a campaign's first event: a spec with a trial
// workflow per trial.
type specHistory struct {
	workflowservice.WorkflowServiceClient
}

func (specHistory) GetWorkflowExecutionHistory(context.Context, *workflowservice.GetWorkflowExecutionHistoryRequest, ...grpc.CallOption) (*workflowservice.GetWorkflowExecutionHistoryResponse, error) {
	p, err := converter.GetDefaultDataConverter().ToPayloads(workflows.CampaignInput{Spec: gleaner.CampaignSpec{Name: "lag"}})
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

// The newest trials are never missing: those in flight that the server's
// search does not list yet are asked for by their workflow ids (seen: a
// list of t00001–t00009 under "the newest 9 of 12").
func TestTrialsViewListsInFlightTrialsTheSearchHasNotYet(t *testing.T) {
	withPatience(t, time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// What `trials` listed before: the search's 9, under "the newest 9 of 12".
	searched, err := New(laggingVisibility{}, Options{}).TrialsNewest(ctx, "lag", 1000)
	require.NoError(t, err)
	require.Len(t, searched.Trials, 9)

	l, err := New(laggingVisibility{}, Options{}).TrialsView(ctx, "lag", 1000)
	require.NoError(t, err)
	require.Len(t, l.Trials, 12)
	require.Equal(t, "t00012", l.Trials[11].TrialID)
	require.Equal(t, workflows.TrialRunning, l.Trials[11].State)
	require.NotNil(t, l.Status)

	l, err = New(laggingVisibility{}, Options{}).TrialsView(ctx, "lag", 5)
	require.NoError(t, err)
	var ids []string
	for _, tr := range l.Trials {
		ids = append(ids, tr.TrialID)
	}
	require.Equal(t, []string{"t00008", "t00009", "t00010", "t00011", "t00012"}, ids, "the newest 5")
}
