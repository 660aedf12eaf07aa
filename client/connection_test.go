package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultConnectionIsValid(t *testing.T) {
	c := client.DefaultConnection()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConnection().Validate() = %v", err)
	}
	want := client.Connection{HostPort: "127.0.0.1:7233", Namespace: "default", TaskQueue: workflows.TaskQueue,
		ConnectTimeout: 30 * time.Second}
	if c != want {
		t.Errorf("DefaultConnection() = %+v, want %+v", c, want)
	}
	if c.UsesTLS() {
		t.Error("DefaultConnection uses TLS, want plaintext to a local dev server")
	}
}

// The variables are those of the `temporal` CLI (and Gleaner's task
// queue): spelled out here, not through the constants, to pin them.
func TestConnectionLoadEnv(t *testing.T) {
	c := client.DefaultConnection()
	err := c.LoadEnv(env(map[string]string{
		"TEMPORAL_ADDRESS":         "temporal.example.org:7233",
		"TEMPORAL_NAMESPACE":       "science",
		"GLEANER_TASK_QUEUE":       "gleaner-gpu",
		"TEMPORAL_API_KEY":         "secret-key",
		"TEMPORAL_TLS":             "true",
		"TEMPORAL_TLS_CA":          "/ca.pem",
		"TEMPORAL_TLS_CERT":        "/c.pem",
		"TEMPORAL_TLS_KEY":         "/k.pem",
		"TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
		// Not the connection's: a worker's settings are left alone.
		"GLEANER_DATA_DIR": "/scratch", "GLEANER_NODE_SOURCE": "static:0",
	}))
	if err != nil {
		t.Fatalf("LoadEnv: %v", err)
	}
	want := client.Connection{
		HostPort: "temporal.example.org:7233", Namespace: "science", TaskQueue: "gleaner-gpu",
		APIKey:         "secret-key",
		TLS:            client.TLSConfig{Enabled: true, CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/k.pem", ServerName: "temporal.internal"},
		ConnectTimeout: client.DefaultConnectTimeout,
	}
	if c != want {
		t.Errorf("LoadEnv:\n got %+v\nwant %+v", c, want)
	}
	if s := c.String(); strings.Contains(s, "secret-key") {
		t.Errorf("String() leaks the API key: %s", s)
	}

	c = client.DefaultConnection()
	if err := c.LoadEnv(env(nil)); err != nil || c != client.DefaultConnection() {
		t.Errorf("LoadEnv with an empty environment: %v, %+v", err, c)
	}
	checkFieldError(t, c.LoadEnv(env(map[string]string{"TEMPORAL_TLS": "yes please"})), "--tls", "TEMPORAL_TLS", "boolean")
}

func TestConnectionValidateNamesTheField(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		modify func(*client.Connection)
		want   []string
	}{
		{"empty address", func(c *client.Connection) { c.HostPort = "" }, []string{"--address", client.EnvAddress, "must be set"}},
		{"address without port", func(c *client.Connection) { c.HostPort = "temporal.example.org" }, []string{"--address", "temporal.example.org"}},
		{"address bad port", func(c *client.Connection) { c.HostPort = "h:99999" }, []string{"--address", "1..65535"}},
		{"address no host", func(c *client.Connection) { c.HostPort = ":7233" }, []string{"--address"}},
		{"namespace", func(c *client.Connection) { c.Namespace = " " }, []string{"--namespace", client.EnvNamespace}},
		{"task queue", func(c *client.Connection) { c.TaskQueue = "" }, []string{"--task-queue", client.EnvTaskQueue}},
		{"cert without key", func(c *client.Connection) { c.TLS.CertFile = file }, []string{"--tls-key", "together"}},
		{"key without cert", func(c *client.Connection) { c.TLS.KeyFile = file }, []string{"--tls-cert", "together"}},
		{"missing CA", func(c *client.Connection) { c.TLS.CAFile = filepath.Join(dir, "nope.pem") }, []string{"--tls-ca", client.EnvTLSCA, "nope.pem", "no such file"}},
		{"CA is a dir", func(c *client.Connection) { c.TLS.CAFile = dir }, []string{"--tls-ca", "directory"}},
		{"api key spaces", func(c *client.Connection) { c.APIKey = "key\n" }, []string{"--api-key", "white space"}},
		{"negative connect timeout", func(c *client.Connection) { c.ConnectTimeout = -time.Second }, []string{"--connect-timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := client.DefaultConnection()
			tc.modify(&c)
			checkFieldError(t, c.Validate(), tc.want...)
		})
	}
}

func TestClientOptionsPlaintext(t *testing.T) {
	c := client.DefaultConnection()
	opts, err := c.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if opts.HostPort != c.HostPort || opts.Namespace != c.Namespace {
		t.Errorf("ClientOptions: HostPort %q Namespace %q", opts.HostPort, opts.Namespace)
	}
	if opts.ConnectionOptions.TLS != nil || opts.Credentials != nil {
		t.Error("ClientOptions of the default connection has TLS or credentials")
	}
}

func TestClientOptionsAPIKeyImpliesTLS(t *testing.T) {
	c := client.DefaultConnection()
	c.APIKey = "k"
	opts, err := c.ClientOptions()
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
	tc, err := client.TLSConfig{CAFile: certFile, CertFile: certFile, KeyFile: keyFile, ServerName: "temporal.internal"}.ClientConfig()
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
	_, err = client.TLSConfig{CAFile: garbage}.ClientConfig()
	checkFieldError(t, err, "--tls-ca", "no PEM certificate")
	_, err = client.TLSConfig{CertFile: certFile, KeyFile: garbage}.ClientConfig()
	checkFieldError(t, err, "--tls-cert", "--tls-key")
}

func TestDialReportsAnUnreachableServer(t *testing.T) {
	c := client.DefaultConnection()
	c.HostPort = "127.0.0.1:1" // nothing listens on port 1
	c.ConnectTimeout = 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Dial(ctx)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Dial to a closed port: err = %v, want one naming the address", err)
	}
	c.HostPort = "nonsense"
	_, err = c.Dial(ctx)
	checkFieldError(t, err, "--address")
}

// checkFieldError checks that err is (or joins) a *client.FieldError and
// that its message contains every want.
func checkFieldError(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want an error containing %q", want)
	}
	var fe *client.FieldError
	if !errors.As(err, &fe) {
		t.Errorf("err = %v (%T), want a *client.FieldError", err, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err = %q, want it to contain %q", err, w)
		}
	}
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

func writeKeyFile(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "codec.key")
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

const testHexKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

func TestCodecConfig(t *testing.T) {
	file := writeKeyFile(t, testHexKey+"\n", 0o600)
	c := client.DefaultConnection()
	if err := c.LoadEnv(env(map[string]string{client.EnvCodecKeyFile: file})); err != nil {
		t.Fatal(err)
	}
	if c.Codec.KeyFile != file || !c.Codec.Enabled() {
		t.Fatalf("LoadEnv: codec %+v, want the key file %s", c.Codec, file)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if w := c.Codec.Warnings(); len(w) != 0 {
		t.Errorf("a 0600 key file: warnings %q, want none", w)
	}
	opts, err := c.ClientOptions()
	if err != nil || opts.DataConverter == nil {
		t.Fatalf("ClientOptions: %v, data converter %v; want the codec's", err, opts.DataConverter)
	}
	p, err := opts.DataConverter.ToPayload("secret-spec")
	if err != nil || strings.Contains(string(p.GetData()), "secret-spec") || string(p.GetMetadata()["encoding"]) != "binary/encrypted" {
		t.Errorf("the client's data converter leaves payloads in clear: %v, %v", p, err)
	}
	if !strings.Contains(c.String(), "codec=aes-256-gcm") {
		t.Errorf("String() = %q, want it to say payloads are encrypted", c.String())
	}
	if args := strings.Join(c.Args(), " "); !strings.Contains(args, "--codec-key-file "+file) {
		t.Errorf("Args() = %s, want --codec-key-file %s", args, file)
	}

	// The keys in the environment work alike, and never show.
	c2 := client.DefaultConnection()
	_ = c2.LoadEnv(env(map[string]string{client.EnvCodecKey: testHexKey}))
	if err := c2.Validate(); err != nil {
		t.Fatalf("Validate with %s: %v", client.EnvCodecKey, err)
	}
	if strings.Contains(c2.String()+strings.Join(c2.Args(), " "), testHexKey) {
		t.Error("String() or Args() shows the codec key")
	}

	// Without a codec, the client's converter is Temporal's default.
	plain, err := client.DefaultConnection().ClientOptions()
	if err != nil || plain.DataConverter != nil {
		t.Errorf("no codec: DataConverter %v, %v; want the SDK default (nil)", plain.DataConverter, err)
	}
}

func TestCodecConfigErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		codec client.CodecConfig
		want  []string
	}{
		"missing file": {client.CodecConfig{KeyFile: filepath.Join(dir, "none")}, []string{"--codec-key-file", client.EnvCodecKeyFile, "cannot read"}},
		"short key":    {client.CodecConfig{KeyFile: writeKeyFile(t, "abcd\n", 0o600)}, []string{"--codec-key-file", client.EnvCodecKeyFile, "line 1", "64 hex characters"}},
		"bad variable": {client.CodecConfig{Key: "not-a-key"}, []string{client.EnvCodecKey, "bad codec key"}},
		"both":         {client.CodecConfig{Key: testHexKey, KeyFile: writeKeyFile(t, testHexKey, 0o600)}, []string{"--codec-key-file", client.EnvCodecKey, "both set"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := client.DefaultConnection()
			c.Codec = tc.codec
			err := c.Validate()
			var fe *client.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *client.FieldError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %q, want it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), testHexKey) {
				t.Errorf("err shows the key: %v", err)
			}
		})
	}
}

func TestCodecKeyFileReadableByOthersWarns(t *testing.T) {
	file := writeKeyFile(t, testHexKey, 0o644)
	w := client.CodecConfig{KeyFile: file}.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "chmod 600 "+file) {
		t.Errorf("a 0644 key file: warnings %q, want one saying chmod 600", w)
	}
}
