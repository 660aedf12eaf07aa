package worker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// Environment variables that Config reads (LoadEnv). The TEMPORAL_* ones
// are those the `temporal` CLI reads too.
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
	EnvDataDir       = "GLEANER_DATA_DIR"
	EnvNodeSource    = "GLEANER_NODE_SOURCE"
)

// Config is how a worker connects to Temporal and what it runs trials on.
// Every field has a flag of `gleaner worker` (named in FieldError) and
// most an environment variable.
type Config struct {
	// HostPort is the Temporal frontend (--address, TEMPORAL_ADDRESS).
	HostPort string
	// Namespace (--namespace, TEMPORAL_NAMESPACE).
	Namespace string
	// TaskQueue the worker polls (--task-queue, GLEANER_TASK_QUEUE).
	TaskQueue string
	// TLS for the connection; see TLSConfig.
	TLS TLSConfig
	// APIKey authenticates to Temporal Cloud and implies TLS (--api-key,
	// TEMPORAL_API_KEY; prefer the variable: flags show up in ps).
	APIKey string
	// DataDir holds checkpoints and run directories (--data-dir,
	// GLEANER_DATA_DIR).
	DataDir string
	// Nodes is where idle nodes come from (--nodes, GLEANER_NODE_SOURCE).
	Nodes NodeSourceConfig
	// ConnectTimeout bounds how long Dial retries an unreachable server
	// (--connect-timeout).
	ConnectTimeout time.Duration
	// StopTimeout is how long a stopping worker lets running activities
	// finish before cancelling them (--stop-timeout).
	StopTimeout time.Duration
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

// UsesTLS reports whether the connection uses TLS.
func (c Config) UsesTLS() bool {
	t := c.TLS
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" ||
		t.ServerName != "" || c.APIKey != ""
}

// Default values.
const (
	DefaultHostPort       = "127.0.0.1:7233"
	DefaultNamespace      = "default"
	DefaultDataDir        = "gleaner-data"
	DefaultNodeSource     = "static:1"
	DefaultConnectTimeout = 30 * time.Second
	DefaultStopTimeout    = 30 * time.Second
)

// DefaultConfig is the configuration without flags or environment: a
// local dev server, the default namespace, Gleaner's task queue, one local
// slot, ./gleaner-data.
func DefaultConfig() Config {
	return Config{
		HostPort:       DefaultHostPort,
		Namespace:      DefaultNamespace,
		TaskQueue:      workflows.TaskQueue,
		DataDir:        DefaultDataDir,
		Nodes:          NodeSourceConfig{Kind: NodeSourceStatic, Static: StaticNodes{Nodes: 1}},
		ConnectTimeout: DefaultConnectTimeout,
		StopTimeout:    DefaultStopTimeout,
	}
}

// FieldError is a configuration error about one field, named by its flag
// (and environment variable, if it has one).
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

func fieldErr(field, env, value, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Env: env, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// LoadEnv sets the fields whose environment variables are set (non-empty)
// in getenv (os.Getenv when nil). Flags, applied afterwards, win.
func LoadEnv(c *Config, getenv func(string) string) error {
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
	str(&c.DataDir, EnvDataDir)
	var errs []error
	if v := getenv(EnvTLS); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fieldErr("tls", EnvTLS, v, "not a boolean (true or false)"))
		}
		c.TLS.Enabled = b
	}
	if v := getenv(EnvNodeSource); v != "" {
		n, err := ParseNodeSource(v)
		if err != nil {
			errs = append(errs, withEnv(err, EnvNodeSource))
		} else {
			c.Nodes = n
		}
	}
	return errors.Join(errs...)
}

func withEnv(err error, env string) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		cp := *fe
		cp.Env = env
		return &cp
	}
	return err
}

// Validate checks every field and returns all problems, each a
// *FieldError (joined). It checks that the TLS files exist but does not
// parse them; Dial does.
func (c Config) Validate() error {
	var errs []error
	add := func(e *FieldError) { errs = append(errs, e) }

	if c.HostPort == "" {
		add(fieldErr("address", EnvAddress, "", "must be set (host:port of the Temporal frontend)"))
	} else if host, port, err := net.SplitHostPort(c.HostPort); err != nil {
		add(fieldErr("address", EnvAddress, c.HostPort, "not host:port: %v", err))
	} else if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 || host == "" {
		add(fieldErr("address", EnvAddress, c.HostPort, "want host:port with a host and a port in 1..65535"))
	}
	if strings.TrimSpace(c.Namespace) == "" {
		add(fieldErr("namespace", EnvNamespace, "", "must be set"))
	}
	if strings.TrimSpace(c.TaskQueue) == "" {
		add(fieldErr("task-queue", EnvTaskQueue, "", "must be set"))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		if c.TLS.CertFile == "" {
			add(fieldErr("tls-cert", EnvTLSCert, "", "must be set together with --tls-key"))
		} else {
			add(fieldErr("tls-key", EnvTLSKey, "", "must be set together with --tls-cert"))
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
			add(fieldErr(f.field, f.env, f.path, "cannot read: %v", errors.Unwrap(err)))
		} else if st.IsDir() {
			add(fieldErr(f.field, f.env, f.path, "is a directory, want a PEM file"))
		}
	}
	if strings.TrimSpace(c.APIKey) != c.APIKey {
		add(fieldErr("api-key", EnvAPIKey, "", "has leading or trailing white space"))
	}
	if c.DataDir == "" {
		add(fieldErr("data-dir", EnvDataDir, "", "must be set"))
	} else if st, err := os.Stat(c.DataDir); err == nil && !st.IsDir() {
		add(fieldErr("data-dir", EnvDataDir, c.DataDir, "exists and is not a directory"))
	}
	if err := c.Nodes.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ConnectTimeout < 0 {
		add(fieldErr("connect-timeout", "", c.ConnectTimeout.String(), "must not be negative"))
	}
	if c.StopTimeout < 0 {
		add(fieldErr("stop-timeout", "", c.StopTimeout.String(), "must not be negative"))
	}
	return errors.Join(errs...)
}

// String describes the configuration for a person, without secrets.
func (c Config) String() string {
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
	fmt.Fprintf(&b, " nodes=%s data-dir=%s", c.Nodes, c.DataDir)
	return b.String()
}
