package cli

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/client"
)

// Links come from the UI in use: --ui or GLEANER_UI when given, else a dev
// server's UI found at the frontend port + 1000, Temporal Cloud's for a
// Cloud address, else none ("-") rather than a guess.
func TestLinkBaseIsTheUIInUse(t *testing.T) {
	uiAt := map[string]bool{"http://127.0.0.1:8233": true, "http://devbox:8300": true}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--ui", "http://ui.example"}, "http://ui.example"},
		{map[string]string{EnvUI: "http://env-ui"}, nil, "http://env-ui"},
		{map[string]string{EnvUI: "http://env-ui"}, []string{"--ui", "-"}, "-"},
		// A dev server's UI where start-dev puts it, shown as localhost.
		{nil, nil, "http://localhost:8233"},
		{nil, []string{"--address", "devbox:7300"}, "http://devbox:8300"},
		// Nothing answers at port + 1000 (a UI elsewhere, none at all).
		{nil, []string{"--address", "127.0.0.1:7300"}, "-"},
		{nil, []string{"--address", "temporal.example:7233"}, "-"},
		// No dev server behind TLS; Cloud's UI is known.
		{nil, []string{"--address", "127.0.0.1:7233", "--tls"}, "-"},
		{map[string]string{client.EnvAPIKey: "k"}, []string{"--address", "ns.acct.tmprl.cloud:7233"}, temporalCloudUI},
	} {
		o, f := parseConnect(t, tc.env, tc.args...)
		var probed []string
		o.probeUI = func(_ context.Context, base string) bool {
			probed = append(probed, base)
			return uiAt[base]
		}
		cfg, err := o.config(f)
		require.NoError(t, err)
		require.Equal(t, tc.want, o.linkBase(context.Background(), f, cfg), "%v %v", tc.env, tc.args)
		if o.uiBase(f) != "" || cfg.UsesTLS() {
			require.Empty(t, probed, "probed for a UI when none was needed")
		}
	}
}

func TestDevServerUI(t *testing.T) {
	for _, tc := range []struct{ addr, probe, shown string }{
		{"127.0.0.1:7233", "http://127.0.0.1:8233", "http://localhost:8233"},
		{"localhost:7300", "http://localhost:8300", "http://localhost:8300"},
		{"[::1]:7233", "http://[::1]:8233", "http://localhost:8233"},
		{"devbox:7233", "http://devbox:8233", "http://devbox:8233"},
	} {
		probe, shown, ok := devServerUI(tc.addr)
		require.True(t, ok, tc.addr)
		require.Equal(t, tc.probe, probe)
		require.Equal(t, tc.shown, shown)
	}
	for _, bad := range []string{"devbox", "devbox:http", "devbox:65000"} {
		_, _, ok := devServerUI(bad)
		require.False(t, ok, bad)
	}
}

// The probe asks the UI server's settings endpoint: any other HTTP server,
// or none, is no UI.
func TestProbeTemporalUI(t *testing.T) {
	ui := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/settings" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"Auth":{"Enabled":false},"Version":"2.42.1"}`))
	}))
	defer ui.Close()
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	ctx := context.Background()
	require.True(t, probeTemporalUI(ctx, ui.URL))
	require.True(t, probeTemporalUI(ctx, ui.URL+"/"))
	require.False(t, probeTemporalUI(ctx, other.URL))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	require.False(t, probeTemporalUI(ctx, closed))

	// End to end through linkBase: a UI at the address's port + 1000.
	_, port, err := net.SplitHostPort(ui.Listener.Addr().String())
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	if p <= 1000 {
		t.Skipf("the test UI's port %d has no port - 1000", p)
	}
	o, f := parseConnect(t, nil, "--address", "127.0.0.1:"+strconv.Itoa(p-1000))
	cfg, err := o.config(f)
	require.NoError(t, err)
	require.Equal(t, "http://localhost:"+port, o.linkBase(ctx, f, cfg))
}
