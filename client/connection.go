package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/codec"
	"github.com/gleaner-hpc/gleaner/internal/sdklog"
)

// Environment variables that a Connection reads (LoadEnv). The TEMPORAL_*
// ones are those the `temporal` CLI reads too.
const (
	EnvAddress       = "TEMPORAL_ADDRESS"
	EnvNamespace     = "TEMPORAL_NAMESPACE"
	EnvAPIKey        = "TEMPORAL_API_KEY"
	EnvTLS           = "TEMPORAL_TLS"
	EnvTLSCert       = "TEMPORAL_TLS_CERT"
	EnvTLSKey        = "TEMPORAL_TLS_KEY"
	EnvTLSCA         = "TEMPORAL_TLS_CA"
	EnvTLSServerName = "TEMPORAL_TLS_SERVER_NAME"
	EnvTaskQueue     = "GLEANER_TASK_QUEUE"
	// EnvCodecKeyFile and EnvCodecKey give the payload codec's keys
	// (CodecConfig): a file, or the keys themselves.
	EnvCodecKeyFile = "GLEANER_CODEC_KEY_FILE"
	EnvCodecKey     = "GLEANER_CODEC_KEY"
)

// Default connection values.
const (
	DefaultHostPort       = "127.0.0.1:7233"
	DefaultNamespace      = "default"
	DefaultConnectTimeout = 30 * time.Second
)

// Connection says where Gleaner runs and how to reach it: the Temporal
// frontend, namespace and credentials, and the task queue Gleaner's
// workers poll. The gleaner CLI and workers read the same settings, from
// the same flags (named in FieldError) and environment variables, so one
// environment serves them all.
type Connection struct {
	// HostPort is the Temporal frontend (--address, TEMPORAL_ADDRESS).
	HostPort string
	// Namespace (--namespace, TEMPORAL_NAMESPACE).
	Namespace string
	// TaskQueue is where campaigns start and Gleaner's workers poll
	// (--task-queue, GLEANER_TASK_QUEUE).
	TaskQueue string
	// TLS for the connection; see TLSConfig.
	TLS TLSConfig
	// APIKey authenticates to Temporal Cloud and implies TLS (--api-key,
	// TEMPORAL_API_KEY; prefer the variable: flags show up in ps).
	APIKey string
	// Codec encrypts every payload the client writes and decrypts those
	// it reads; see CodecConfig. Zero: payloads in clear.
	Codec CodecConfig
	// ConnectTimeout bounds how long Dial retries an unreachable server
	// (--connect-timeout).
	ConnectTimeout time.Duration
	// Logger is the SDK's logger; nil means the SDK default.
	Logger log.Logger `json:"-"`
}

// TLSConfig configures TLS and mTLS to the Temporal frontend.
type TLSConfig struct {
	// Enabled turns TLS on with the system roots (--tls, TEMPORAL_TLS). Any
	// of the files below, or an API key, imply it.
	Enabled bool
	// CAFile is a PEM bundle of roots to trust instead of the system's
	// (--tls-ca, TEMPORAL_TLS_CA).
	CAFile string
	// CertFile and KeyFile are the client certificate and key for mTLS
	// (--tls-cert, TEMPORAL_TLS_CERT; --tls-key, TEMPORAL_TLS_KEY).
	CertFile, KeyFile string
	// ServerName overrides the name checked in the server's certificate
	// (--tls-server-name, TEMPORAL_TLS_SERVER_NAME).
	ServerName string
}

// CodecConfig says where the keys of the AES-256-GCM payload codec
// (package codec) come from: a file or the environment, never both.
// Every process of a deployment — workers, agents, the CLI, Go clients —
// must use the same keys (docs/security.md).
type CodecConfig struct {
	// KeyFile holds the key ring: 32 raw bytes, or one key a line in hex
	// or base64, the first encrypting (--codec-key-file,
	// GLEANER_CODEC_KEY_FILE; codec.ParseKeys).
	KeyFile string
	// Key is the key ring itself, in the key file's text format
	// (GLEANER_CODEC_KEY only: flags show up in ps).
	Key string `json:"-"`
}

// Enabled reports whether payloads are encrypted.
func (c CodecConfig) Enabled() bool { return c.KeyFile != "" || c.Key != "" }

// New reads the keys and makes the codec; nil, nil when not Enabled.
// Errors name the flag or variable at fault, never the key.
func (c CodecConfig) New() (*codec.Codec, error) {
	if !c.Enabled() {
		return nil, nil
	}
	if c.KeyFile != "" && c.Key != "" {
		return nil, NewFieldError("codec-key-file", EnvCodecKeyFile, c.KeyFile, "and %s are both set: give the keys one way", EnvCodecKey)
	}
	data, field, env, value := []byte(c.Key), "codec-key-file", EnvCodecKey, ""
	if c.KeyFile != "" {
		b, err := os.ReadFile(c.KeyFile)
		if err != nil {
			return nil, NewFieldError("codec-key-file", EnvCodecKeyFile, c.KeyFile, "cannot read: %v", errors.Unwrap(err))
		}
		data, env, value = b, EnvCodecKeyFile, c.KeyFile
	}
	ring, err := codec.ParseKeys(data)
	if err == nil {
		var cd *codec.Codec
		if cd, err = codec.New(ring); err == nil {
			return cd, nil
		}
	}
	return nil, NewFieldError(field, env, value, "%v", err)
}

// Warnings are what a person should fix that does not stop the
// connection: a codec key file that others than its owner may read.
func (c CodecConfig) Warnings() []string {
	if c.KeyFile == "" {
		return nil
	}
	st, err := os.Stat(c.KeyFile)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return []string{fmt.Sprintf("--codec-key-file %s is readable by its group or others (mode %04o): chmod 600 %s",
		c.KeyFile, st.Mode().Perm(), c.KeyFile)}
}

// DefaultConnection is the connection without flags or environment: a
// local dev server, the default namespace, Gleaner's task queue.
func DefaultConnection() Connection {
	return Connection{
		HostPort:       DefaultHostPort,
		Namespace:      DefaultNamespace,
		TaskQueue:      gleaner.TaskQueue,
		ConnectTimeout: DefaultConnectTimeout,
	}
}

// UsesTLS reports whether the connection uses TLS.
func (c Connection) UsesTLS() bool {
	t := c.TLS
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" ||
		t.ServerName != "" || c.APIKey != ""
}

// FieldError is a configuration error about one setting, named by its
// flag (and environment variable, if it has one) so that a person knows
// what to change whether they set it on a command line or in Go.
type FieldError struct {
	Field  string // flag name without dashes, e.g. "tls-cert"
	Env    string // environment variable, or ""
	Value  string // offending value ("" when missing; secrets never shown)
	Reason string
}

func (e *FieldError) Error() string {
	name := "--" + e.Field
	if e.Env != "" {
		name += " (" + e.Env + ")"
	}
	if e.Value != "" {
		return fmt.Sprintf("%s %q: %s", name, e.Value, e.Reason)
	}
	return name + ": " + e.Reason
}

// NewFieldError is the FieldError about field (its environment variable
// env, offending value) whose Reason is format's text; the worker's and
// the agent's configurations make theirs with it too.
func NewFieldError(field, env, value, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Env: env, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// LoadEnv sets the fields whose environment variables are set (non-empty)
// in getenv (os.Getenv when nil). Flags, applied afterwards, win.
func (c *Connection) LoadEnv(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	str := func(dst *string, env string) {
		if v := getenv(env); v != "" {
			*dst = v
		}
	}
	str(&c.HostPort, EnvAddress)
	str(&c.Namespace, EnvNamespace)
	str(&c.TaskQueue, EnvTaskQueue)
	str(&c.APIKey, EnvAPIKey)
	str(&c.TLS.CertFile, EnvTLSCert)
	str(&c.TLS.KeyFile, EnvTLSKey)
	str(&c.TLS.CAFile, EnvTLSCA)
	str(&c.TLS.ServerName, EnvTLSServerName)
	str(&c.Codec.KeyFile, EnvCodecKeyFile)
	str(&c.Codec.Key, EnvCodecKey)
	if v := getenv(EnvTLS); v != "" {
		b, err := strconv.ParseBool(v)
		c.TLS.Enabled = b
		if err != nil {
			return NewFieldError("tls", EnvTLS, v, "not a boolean (true or false)")
		}
	}
	return nil
}

// Validate checks every field and returns all problems, each a
// *FieldError (joined). It checks that the TLS files exist but does not
// parse them; Dial does.
func (c Connection) Validate() error {
	var errs []error
	add := func(e *FieldError) { errs = append(errs, e) }

	if c.HostPort == "" {
		add(NewFieldError("address", EnvAddress, "", "must be set (host:port of the Temporal frontend)"))
	} else if host, port, err := net.SplitHostPort(c.HostPort); err != nil {
		add(NewFieldError("address", EnvAddress, c.HostPort, "not host:port: %v", err))
	} else if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 || host == "" {
		add(NewFieldError("address", EnvAddress, c.HostPort, "want host:port with a host and a port in 1..65535"))
	}
	if strings.TrimSpace(c.Namespace) == "" {
		add(NewFieldError("namespace", EnvNamespace, "", "must be set"))
	}
	if strings.TrimSpace(c.TaskQueue) == "" {
		add(NewFieldError("task-queue", EnvTaskQueue, "", "must be set"))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		if c.TLS.CertFile == "" {
			add(NewFieldError("tls-cert", EnvTLSCert, "", "must be set together with --tls-key"))
		} else {
			add(NewFieldError("tls-key", EnvTLSKey, "", "must be set together with --tls-cert"))
		}
	}
	for _, f := range []struct{ field, env, path string }{
		{"tls-ca", EnvTLSCA, c.TLS.CAFile},
		{"tls-cert", EnvTLSCert, c.TLS.CertFile},
		{"tls-key", EnvTLSKey, c.TLS.KeyFile},
	} {
		if f.path == "" {
			continue
		}
		if st, err := os.Stat(f.path); err != nil {
			add(NewFieldError(f.field, f.env, f.path, "cannot read: %v", errors.Unwrap(err)))
		} else if st.IsDir() {
			add(NewFieldError(f.field, f.env, f.path, "is a directory, want a PEM file"))
		}
	}
	if strings.TrimSpace(c.APIKey) != c.APIKey {
		add(NewFieldError("api-key", EnvAPIKey, "", "has leading or trailing white space"))
	}
	if c.ConnectTimeout < 0 {
		add(NewFieldError("connect-timeout", "", c.ConnectTimeout.String(), "must not be negative"))
	}
	if _, err := c.Codec.New(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// String describes the connection for a person, without secrets.
func (c Connection) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "address=%s namespace=%s task-queue=%s", c.HostPort, c.Namespace, c.TaskQueue)
	if c.UsesTLS() {
		b.WriteString(" tls=on")
		if c.TLS.CertFile != "" {
			b.WriteString(" mtls=on")
		}
		if c.TLS.ServerName != "" {
			fmt.Fprintf(&b, " tls-server-name=%s", c.TLS.ServerName)
		}
	}
	if c.APIKey != "" {
		b.WriteString(" api-key=(set)")
	}
	if c.Codec.Enabled() {
		b.WriteString(" codec=aes-256-gcm")
	}
	return b.String()
}

// ClientOptions turns c into Temporal SDK client options, loading the TLS
// files and the codec's keys. Errors name the field at fault.
func (c Connection) ClientOptions() (tclient.Options, error) {
	opts := tclient.Options{
		HostPort:  c.HostPort,
		Namespace: c.Namespace,
		Logger:    sdklog.Logger(c.Logger),
	}
	dc, err := c.DataConverter()
	if err != nil {
		return tclient.Options{}, err
	}
	if c.Codec.Enabled() {
		opts.DataConverter = dc
	}
	if c.APIKey != "" {
		opts.Credentials = tclient.NewAPIKeyStaticCredentials(c.APIKey)
	}
	if c.UsesTLS() {
		tc, err := c.TLS.ClientConfig()
		if err != nil {
			return tclient.Options{}, err
		}
		opts.ConnectionOptions.TLS = tc
	}
	return opts, nil
}

// DataConverter is the data converter of c's clients: Temporal's default,
// with the payload codec when c.Codec is Enabled. Whatever reads payloads
// besides the SDK (a workflow's history, client.Options.DataConverter)
// must decode them with it.
func (c Connection) DataConverter() (converter.DataConverter, error) {
	cd, err := c.Codec.New()
	if err != nil {
		return nil, err
	}
	if cd == nil {
		return converter.GetDefaultDataConverter(), nil
	}
	return cd.DataConverter(), nil
}

// ClientConfig builds the TLS configuration: system roots or CAFile, a
// client certificate for mTLS, ServerName.
func (t TLSConfig) ClientConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, NewFieldError("tls-ca", EnvTLSCA, t.CAFile, "%v", errors.Unwrap(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, NewFieldError("tls-ca", EnvTLSCA, t.CAFile, "no PEM certificate found")
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, NewFieldError("tls-cert", EnvTLSCert, "", "--tls-cert and --tls-key must be set together")
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, NewFieldError("tls-cert", EnvTLSCert, t.CertFile, "loading the key pair with --tls-key %s: %v", t.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Dial validates c and connects to Temporal, retrying an unreachable
// server for up to c.ConnectTimeout (0: one attempt). The Temporal client
// it returns is the caller's to close; New wraps it.
func (c Connection) Dial(ctx context.Context) (tclient.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opts, err := c.ClientOptions()
	if err != nil {
		return nil, err
	}
	if c.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.ConnectTimeout)
		defer cancel()
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		tc, err := tclient.DialContext(ctx, opts)
		if err == nil {
			return tc, nil
		}
		if c.ConnectTimeout <= 0 {
			return nil, fmt.Errorf("connecting to Temporal at %s (namespace %s): %w", c.HostPort, c.Namespace, err)
		}
		if lastErr == nil || ctx.Err() == nil {
			lastErr = err // the attempt cut short by the deadline says less
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connecting to Temporal at %s (namespace %s), gave up after %v: %w",
				c.HostPort, c.Namespace, c.ConnectTimeout, lastErr)
		case <-tick.C:
		}
	}
}

// Args are the command-line flags that make another Gleaner process
// (an agent a Slurm pilot starts) connect as c does. The API key and a
// codec key given in GLEANER_CODEC_KEY are left out: flags show up in ps;
// pass them in TEMPORAL_API_KEY and GLEANER_CODEC_KEY.
func (c Connection) Args() []string {
	args := []string{"--address", c.HostPort, "--namespace", c.Namespace, "--task-queue", c.TaskQueue}
	for _, f := range []struct{ flag, v string }{
		{"--tls-ca", c.TLS.CAFile}, {"--tls-cert", c.TLS.CertFile}, {"--tls-key", c.TLS.KeyFile}, {"--tls-server-name", c.TLS.ServerName},
	} {
		if f.v != "" {
			args = append(args, f.flag, f.v)
		}
	}
	if c.TLS.Enabled {
		args = append(args, "--tls")
	}
	if c.Codec.KeyFile != "" {
		args = append(args, "--codec-key-file", c.Codec.KeyFile)
	}
	return args
}
