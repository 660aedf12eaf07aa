package integration_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/codec"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// With --codec-key-file, a campaign's spec, parameters and env are never
// in clear in the server's histories, while the Go client, `gleaner
// status` and `gleaner codec-server` (for the web UI) still read them.
func TestCodecKeepsPayloadsSecret(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	keyFile := filepath.Join(t.TempDir(), "codec.key")
	if err := os.WriteFile(keyFile, []byte("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const tq = "security-codec"
	w := startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: tq, Args: []string{"--codec-key-file", keyFile}})
	// Without an allow-list the worker says who may run what here.
	if log := w.Log(); !strings.Contains(log, "warning: any trainer command may run on this host") || !strings.Contains(log, "--allow-command") {
		t.Errorf("the worker without --allow-command does not warn:\n%s", log)
	}

	const secret = "s3cret-7f3a9c-never-in-clear"
	spec := testenv.MLPSpec(t, "codec", 2, 2, 20, 5, testenv.Fixed("note", secret))
	spec.Env = map[string]string{"WANDB_API_KEY": secret}

	conn := client.DefaultConnection()
	conn.HostPort, conn.Namespace, conn.TaskQueue = srv.Address(), srv.Namespace(), tq
	conn.Codec.KeyFile = keyFile
	ctx := testContext(t, 3*time.Minute)
	tc, err := conn.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	dc, err := conn.DataConverter()
	if err != nil {
		t.Fatal(err)
	}
	gc := client.New(tc, client.Options{TaskQueue: tq, Namespace: srv.Namespace(), UIBase: "-", DataConverter: dc})
	if _, err := gc.Submit(ctx, spec); err != nil {
		t.Fatal(err)
	}
	res, err := gc.Wait(ctx, spec.Name)
	if err != nil || res.Completed != 2 {
		t.Fatalf("campaign: %+v, %v; want 2 trials completed\n%s", res, err, w.Log())
	}

	// The Go client reads the spec back, env and all.
	got, err := gc.Spec(ctx, spec.Name)
	if err != nil || got.Env["WANDB_API_KEY"] != secret {
		t.Errorf("Spec through the codec: env %v, %v; want the secret back", got.Env, err)
	}

	// No payload of any history holds the secret, in any form the server
	// stores: every event is scanned whole.
	raw := srv.Client() // no codec
	list, err := raw.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	var sealed *commonpb.Payload
	histories := 0
	for _, ex := range list.GetExecutions() {
		histories++
		it := raw.GetWorkflowHistory(ctx, ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			b, err := proto.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("workflow %s event %d (%s) holds the secret in clear", ex.GetExecution().GetWorkflowId(), e.GetEventId(), e.GetEventType())
			}
			if in := e.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads(); sealed == nil && len(in) > 0 &&
				ex.GetExecution().GetWorkflowId() == workflows.CampaignWorkflowID(spec.Name) {
				sealed = in[0]
			}
		}
	}
	if histories < 3 {
		t.Errorf("scanned %d histories, want the campaign's, its trials' and the pool's", histories)
	}
	if sealed == nil {
		t.Fatalf("no start input found for campaign %s", spec.Name)
	}
	if enc := string(sealed.GetMetadata()[converter.MetadataEncoding]); enc != codec.MetadataEncodingEncrypted {
		t.Errorf("the campaign's input is %q, want %q", enc, codec.MetadataEncodingEncrypted)
	}

	// gleaner status reads it with the key.
	bin := gleanerBinary(t)
	out, err := exec.Command(bin, "status", spec.Name, "--address", srv.Address(), "--namespace", srv.Namespace(),
		"--task-queue", tq, "--ui", "-", "--codec-key-file", keyFile).CombinedOutput()
	if err != nil || !strings.Contains(string(out), spec.Name) {
		t.Errorf("gleaner status with --codec-key-file: %v\n%s", err, out)
	}

	// The codec server decrypts it for the web UI, with the token only.
	tokenFile := filepath.Join(t.TempDir(), "token")
	_ = os.WriteFile(tokenFile, []byte("ui-token\n"), 0o600)
	cs := exec.Command(bin, "codec-server", "--listen", "127.0.0.1:0", "--codec-key-file", keyFile,
		"--cors-origin", "http://localhost:8233", "--auth-token-file", tokenFile)
	cs.Env = cleanEnv()
	stdout, err := cs.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Process.Kill(); _ = cs.Wait() })
	sc := bufio.NewScanner(stdout)
	addr := ""
	for addr == "" && sc.Scan() {
		if m := regexp.MustCompile(`at (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatal("gleaner codec-server did not say where it listens")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{sealed}})
	decode := func(token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, addr+"/decode", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "http://localhost:8233")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := decode(""); code != http.StatusUnauthorized {
		t.Errorf("codec server without the token: %d, want 401", code)
	}
	code, text := decode("ui-token")
	var decoded commonpb.Payloads
	if code != http.StatusOK || protojson.Unmarshal([]byte(text), &decoded) != nil || len(decoded.Payloads) != 1 {
		t.Fatalf("codec server /decode: %d %s", code, text)
	}
	var in struct {
		Spec struct {
			Env map[string]string `json:"env"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(decoded.Payloads[0].GetData(), &in); err != nil || in.Spec.Env["WANDB_API_KEY"] != secret {
		t.Errorf("codec server decoded %s (%v), want the campaign input with its env", fmt.Sprint(string(decoded.Payloads[0].GetData())), err)
	}
}
