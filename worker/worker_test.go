package worker_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// recorder is a worker.Registrar that records what was registered.
type recorder struct{ workflows, activities []string }

func (r *recorder) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.workflows = append(r.workflows, o.Name)
}

func (r *recorder) RegisterActivityWithOptions(_ any, o activity.RegisterOptions) {
	r.activities = append(r.activities, o.Name)
}

func fakeWorkflow(workflow.Context) error      { return nil }
func fakeActivity(context.Context) error       { return nil }
func otherActivity(context.Context, int) error { return nil }

func TestRegisterUsesTheNamesOfTheAPI(t *testing.T) {
	comps := worker.Components{
		CampaignWorkflow: fakeWorkflow, TrialWorkflow: fakeWorkflow, PoolWorkflow: fakeWorkflow,
		RunTrial: fakeActivity, Allocate: otherActivity, PollNodes: fakeActivity, RegisterTrial: otherActivity,
	}
	var r recorder
	if err := worker.Register(&r, comps); err != nil {
		t.Fatal(err)
	}
	wantWF := []string{workflows.CampaignWorkflowName, workflows.TrialWorkflowName, workflows.PoolWorkflowName}
	wantAct := []string{workflows.RunTrialActivityName, workflows.AllocateActivityName, workflows.PollNodesActivityName, workflows.RegisterTrialActivityName}
	if !slices.Equal(r.workflows, wantWF) || !slices.Equal(r.activities, wantAct) {
		t.Errorf("registered workflows %v activities %v; want %v and %v", r.workflows, r.activities, wantWF, wantAct)
	}
	if m := comps.Missing(); len(m) != 0 {
		t.Errorf("Missing() = %v with every component set", m)
	}
	if !slices.Equal(comps.Workflows(), wantWF) || !slices.Equal(comps.Activities(), wantAct) {
		t.Errorf("Workflows() = %v, Activities() = %v", comps.Workflows(), comps.Activities())
	}
}

func TestRegisterSkipsUnsetAndRejectsNonFunctions(t *testing.T) {
	var r recorder
	err := worker.Register(&r, worker.Components{PoolWorkflow: fakeWorkflow, RunTrial: "not a function"})
	if err == nil || !strings.Contains(err.Error(), "RunTrial") || !strings.Contains(err.Error(), workflows.RunTrialActivityName) {
		t.Fatalf("Register with a string as RunTrial: err = %v, want one naming RunTrial", err)
	}
	if !slices.Equal(r.workflows, []string{workflows.PoolWorkflowName}) || len(r.activities) != 0 {
		t.Errorf("registered %v / %v, want only the pool workflow", r.workflows, r.activities)
	}
	missing := worker.Components{PoolWorkflow: fakeWorkflow}.Missing()
	want := []string{workflows.CampaignWorkflowName, workflows.TrialWorkflowName,
		workflows.RunTrialActivityName, workflows.AllocateActivityName, workflows.PollNodesActivityName, workflows.RegisterTrialActivityName}
	if !slices.Equal(missing, want) {
		t.Errorf("Missing() = %v, want %v", missing, want)
	}
}

func TestClientOptionsPlaintext(t *testing.T) {
	c := worker.DefaultConfig()
	opts, err := worker.ClientOptions(c)
	if err != nil {
		t.Fatal(err)
	}
	if opts.HostPort != c.HostPort || opts.Namespace != c.Namespace {
		t.Errorf("ClientOptions: HostPort %q Namespace %q", opts.HostPort, opts.Namespace)
	}
	if opts.ConnectionOptions.TLS != nil || opts.Credentials != nil {
		t.Error("ClientOptions of the default config has TLS or credentials")
	}
}

func TestClientOptionsAPIKeyImpliesTLS(t *testing.T) {
	c := worker.DefaultConfig()
	c.APIKey = "k"
	opts, err := worker.ClientOptions(c)
	if err != nil {
		t.Fatal(err)
	}
	if opts.ConnectionOptions.TLS == nil || opts.Credentials == nil {
		t.Errorf("API key: TLS %v, credentials %v; want both", opts.ConnectionOptions.TLS, opts.Credentials)
	}
}

func TestTLSClientConfigMTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	tc, err := worker.TLSClientConfig(worker.TLSConfig{CAFile: certFile, CertFile: certFile, KeyFile: keyFile, ServerName: "temporal.internal"})
	if err != nil {
		t.Fatal(err)
	}
	if tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.ServerName != "temporal.internal" {
		t.Errorf("TLS config: roots %v, %d certificates, server name %q", tc.RootCAs != nil, len(tc.Certificates), tc.ServerName)
	}

	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = worker.TLSClientConfig(worker.TLSConfig{CAFile: garbage})
	checkFieldError(t, err, "--tls-ca", "no PEM certificate")
	_, err = worker.TLSClientConfig(worker.TLSConfig{CertFile: certFile, KeyFile: garbage})
	checkFieldError(t, err, "--tls-cert", "--tls-key")
}

func TestDialReportsAnUnreachableServer(t *testing.T) {
	c := worker.DefaultConfig()
	c.DataDir = t.TempDir()
	c.HostPort = "127.0.0.1:1" // nothing listens on port 1
	c.ConnectTimeout = 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := worker.Dial(ctx, c)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Dial to a closed port: err = %v, want one naming the address", err)
	}
	c.HostPort = "nonsense"
	_, err = worker.Dial(ctx, c)
	checkFieldError(t, err, "--address")
}

// writeSelfSigned writes a self-signed certificate and its key as PEM.
func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "temporal.internal"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		DNSNames: []string{"temporal.internal"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
