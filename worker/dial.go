package worker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/client"
)

// ClientOptions turns c into SDK client options, loading the TLS files.
// Errors name the field at fault.
func ClientOptions(c Config) (client.Options, error) {
	opts := client.Options{
		HostPort:  c.HostPort,
		Namespace: c.Namespace,
		Logger:    c.Logger,
	}
	if c.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(c.APIKey)
	}
	if c.UsesTLS() {
		tc, err := TLSClientConfig(c.TLS)
		if err != nil {
			return client.Options{}, err
		}
		opts.ConnectionOptions.TLS = tc
	}
	return opts, nil
}

// TLSClientConfig builds the TLS configuration: system roots or CAFile,
// a client certificate for mTLS, ServerName.
func TLSClientConfig(t TLSConfig) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fieldErr("tls-ca", EnvTLSCA, t.CAFile, "%v", errors.Unwrap(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fieldErr("tls-ca", EnvTLSCA, t.CAFile, "no PEM certificate found")
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, fieldErr("tls-cert", EnvTLSCert, "", "--tls-cert and --tls-key must be set together")
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fieldErr("tls-cert", EnvTLSCert, t.CertFile, "loading the key pair with --tls-key %s: %v", t.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Dial validates c and connects to Temporal, retrying an unreachable
// server for up to c.ConnectTimeout (0: one attempt).
func Dial(ctx context.Context, c Config) (client.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opts, err := ClientOptions(c)
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
		cl, err := client.DialContext(ctx, opts)
		if err == nil {
			return cl, nil
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
