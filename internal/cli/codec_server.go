package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/codec"
)

// Environment variables of `gleaner codec-server` (besides the codec's
// keys, client.EnvCodecKeyFile and client.EnvCodecKey).
const (
	EnvCodecListen      = "GLEANER_CODEC_LISTEN"
	EnvCodecCORSOrigins = "GLEANER_CODEC_CORS_ORIGINS"
	// EnvCodecAuthToken is the bearer token itself (--auth-token-file
	// gives it in a file).
	EnvCodecAuthToken     = "GLEANER_CODEC_AUTH_TOKEN"
	EnvCodecAuthTokenFile = "GLEANER_CODEC_AUTH_TOKEN_FILE"
)

// DefaultCodecListen is where the codec server listens: loopback, since
// whoever reaches it can decrypt.
const DefaultCodecListen = "127.0.0.1:8081"

type codecServerOptions struct {
	listen    string
	keyFile   string
	origins   []string
	tokenFile string
	getenv    func(string) string
	// ready, when set, is told the address once the server listens (tests).
	ready func(addr string)
	// keys are the resolved key settings, for warnings.
	keys client.CodecConfig
}

func newCodecServerCmd() *cobra.Command {
	o := &codecServerOptions{getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "codec-server",
		Short: "Serve the payload codec to the Temporal web UI and CLI, so they show encrypted payloads in clear",
		Long: `Serves POST /encode and /decode (Temporal's remote codec protocol) with the
AES-256-GCM keys that workers, agents and clients encrypt payloads with
(--codec-key-file, else GLEANER_CODEC_KEY_FILE or GLEANER_CODEC_KEY).

Point the web UI at it: the UI's Data Encoder setting (per browser), or
the UI server's codec endpoint (temporal server start-dev --ui-codec-endpoint
URL; the temporalio/ui image's TEMPORAL_CODEC_ENDPOINT); and let the UI's
origin call it with --cors-origin. The temporal CLI takes --codec-endpoint
URL (and --codec-auth "Bearer TOKEN").

Whoever can call it can decrypt any payload: it listens on loopback by
default; elsewhere, require a token (--auth-token-file) and TLS in front.
See docs/security.md.`,
		Example: `  gleaner codec-server --codec-key-file /etc/gleaner/codec.key --cors-origin http://localhost:8233
  temporal server start-dev --ui-codec-endpoint http://127.0.0.1:8081`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", DefaultCodecListen, "address to listen on, host:port ["+EnvCodecListen+"]")
	f.StringVar(&o.keyFile, "codec-key-file", "", "the codec's keys (as gleaner worker --codec-key-file) ["+client.EnvCodecKeyFile+", or the keys in "+client.EnvCodecKey+"]")
	f.StringArrayVar(&o.origins, "cors-origin", nil, "origin of a Temporal web UI allowed to call from a browser, e.g. http://localhost:8233; repeatable, * for any ["+EnvCodecCORSOrigins+", comma separated]")
	f.StringVar(&o.tokenFile, "auth-token-file", "", "require Authorization: Bearer <the token in this file> ["+EnvCodecAuthTokenFile+", or the token in "+EnvCodecAuthToken+"]")
	return cmd
}

// config resolves the flags over the environment into the handler's
// codec and options, and the address.
func (o *codecServerOptions) config(cmd *cobra.Command) (*codec.Codec, codec.HTTPOptions, string, error) {
	var hopts codec.HTTPOptions
	getenv := o.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	flags := cmd.Flags()
	listen := o.listen
	if v := getenv(EnvCodecListen); v != "" && !flags.Changed("listen") {
		listen = v
	}
	keys := client.CodecConfig{KeyFile: getenv(client.EnvCodecKeyFile), Key: getenv(client.EnvCodecKey)}
	if flags.Changed("codec-key-file") {
		keys = client.CodecConfig{KeyFile: o.keyFile}
	}
	if !keys.Enabled() {
		return nil, hopts, "", withCode(ExitUsage, errors.New("--codec-key-file: must be set (or "+client.EnvCodecKeyFile+", or "+client.EnvCodecKey+")"))
	}
	o.keys = keys
	cd, err := keys.New()
	if err != nil {
		return nil, hopts, "", withCode(ExitUsage, err)
	}
	hopts.Origins = o.origins
	if v := getenv(EnvCodecCORSOrigins); v != "" && !flags.Changed("cors-origin") {
		hopts.Origins = strings.Split(v, ",")
	}
	if hopts.Token, err = bearerToken(flags, getenv, o.tokenFile, EnvCodecAuthTokenFile, EnvCodecAuthToken); err != nil {
		return nil, hopts, "", err
	}
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return nil, hopts, "", withCode(ExitUsage, fmt.Errorf("--listen %q: %v", listen, err))
	}
	return cd, hopts, listen, nil
}

func (o *codecServerOptions) run(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) error {
	cd, hopts, listen, err := o.config(cmd)
	if err != nil {
		return err
	}
	warnConnection(stderr, "gleaner codec-server", client.Connection{Codec: o.keys})
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", listen, err)
	}
	host, _, _ := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); hopts.Token == "" && (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		fmt.Fprintf(stderr, "gleaner codec-server: warning: listening on %s without --auth-token-file: whoever reaches it can decrypt every payload\n", listen)
	}
	srv := &http.Server{Handler: codec.NewHTTPHandler(cd, hopts), ReadHeaderTimeout: 10 * time.Second}
	addr := ln.Addr().String()
	fmt.Fprintf(stdout, "gleaner codec-server: serving /encode and /decode at http://%s (primary key id %s)\n", addr, cd.PrimaryKeyID())
	if len(hopts.Origins) > 0 {
		fmt.Fprintf(stdout, "gleaner codec-server: browsers may call it from %s\n", strings.Join(hopts.Origins, ", "))
	} else {
		fmt.Fprintf(stdout, "gleaner codec-server: no --cors-origin: the web UI cannot call it from a browser (the temporal CLI can)\n")
	}
	if o.ready != nil {
		o.ready(addr)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("codec server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	fmt.Fprintln(stdout, "gleaner codec-server: stopped")
	return nil
}

// bearerToken is the token a server requires: the one in --auth-token-file
// (file), else in the file envFile names, else envToken's value ("" for
// none).
func bearerToken(flags *pflag.FlagSet, getenv func(string) string, file, envFile, envToken string) (string, error) {
	if v := getenv(envFile); v != "" && !flags.Changed("auth-token-file") {
		file = v
	}
	if file == "" {
		return getenv(envToken), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", withCode(ExitUsage, fmt.Errorf("--auth-token-file %s: %w", file, err))
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", withCode(ExitUsage, fmt.Errorf("--auth-token-file %s: empty", file))
	}
	return token, nil
}
