package devserver_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
)

// envFakeServer makes this test binary a stand-in for `temporal server
// start-dev`: a server that accepts its first search-attribute call and
// never answers it, as a dev server that has just started on a loaded
// machine can, and answers every later one.
const envFakeServer = "GLEANER_DEVSERVER_FAKE"

func TestMain(m *testing.M) {
	if os.Getenv(envFakeServer) == "1" {
		os.Exit(fakeServer(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeServer(args []string) int {
	port := ""
	for i, a := range args {
		if a == "--port" && i+1 < len(args) {
			port = args[i+1]
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake server:", err)
		return 1
	}
	s := grpc.NewServer()
	workflowservice.RegisterWorkflowServiceServer(s, fakeWorkflowService{})
	operatorservice.RegisterOperatorServiceServer(s, &fakeOperatorService{})
	if err := s.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, "fake server:", err)
		return 1
	}
	return 0
}

type fakeWorkflowService struct {
	workflowservice.UnimplementedWorkflowServiceServer
}

func (fakeWorkflowService) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{ServerVersion: "fake"}, nil
}

type fakeOperatorService struct {
	operatorservice.UnimplementedOperatorServiceServer
	calls atomic.Int32
}

func (f *fakeOperatorService) ListSearchAttributes(ctx context.Context, _ *operatorservice.ListSearchAttributesRequest) (*operatorservice.ListSearchAttributesResponse, error) {
	if f.calls.Add(1) == 1 {
		<-ctx.Done() // accepted, never answered
		return nil, ctx.Err()
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for name, typ := range devserver.DefaultSearchAttributes() {
		for short, v := range enumspb.IndexedValueType_shorthandValue {
			if strings.EqualFold(short, typ) {
				attrs[name] = enumspb.IndexedValueType(v)
			}
		}
	}
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: attrs}, nil
}

// One call the server accepts and does not answer must not use up the
// whole start deadline (the suite saw "not ready … after 2m0s" on a loaded
// machine): the probe gives up after ProbeTimeout and the next one asks
// again.
func TestStartOutlastsACallTheServerDoesNotAnswer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envFakeServer, "1")
	start := time.Now()
	s, err := devserver.Start(context.Background(), devserver.Options{
		CLIPath: exe, StartTimeout: devserver.ProbeTimeout + time.Minute,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = s.Stop() }()
	t.Logf("ready after %v", time.Since(start).Round(time.Millisecond))
}
