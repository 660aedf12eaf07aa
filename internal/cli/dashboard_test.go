package cli

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

func TestDashboardRejectsBadFlags(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "nohost"}, `--listen "nohost"`},
		{[]string{"--auth-token-file", empty}, "--auth-token-file " + empty + ": empty"},
		{[]string{"--auth-token-file", filepath.Join(dir, "missing")}, "--auth-token-file " + filepath.Join(dir, "missing")},
		{[]string{"--tls-cert-file", "x.crt"}, "--tls-cert-file and --tls-key-file: give both or neither"},
		{[]string{"--tls-cert-file", empty, "--tls-key-file", empty}, "--tls-cert-file " + empty},
		{[]string{"--refresh", "0s"}, "--refresh 0s: must be > 0"},
	} {
		_, _, err := runCLI(t, append([]string{"dashboard"}, tc.args...)...)
		require.ErrorContains(t, err, tc.want, tc.args)
		require.Equal(t, ExitUsage, ExitCode(err), tc.args)
	}
}

// `gleaner dashboard` against a real dev server, over TLS with a token:
// nothing without the token; with it (header, or ?token= then the
// cookie) the page and its API.
func TestDashboardServesWithTLSAndAToken(t *testing.T) {
	srv := testenv.DevServer(t, devserver.Options{})
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("s3cret\n"), 0o600))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		cmd := newRootCmd(pw, io.Discard)
		cmd.SetArgs([]string{"dashboard", "--address", srv.Address(), "--namespace", srv.Namespace(), "--listen", "127.0.0.1:0",
			"--auth-token-file", token, "--tls-cert-file", cert, "--tls-key-file", key})
		done <- cmd.ExecuteContext(ctx)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	m := regexp.MustCompile(`serving (https://\S+/)`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	base := m[1]

	jar := &cookieJar{}
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(url string, hdr ...string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if len(hdr) == 2 {
			req.Header.Set(hdr[0], hdr[1])
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	require.Equal(t, http.StatusUnauthorized, get(base+"api/overview").StatusCode)
	resp := get(base+"api/overview", "Authorization", "Bearer s3cret")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var ov struct {
		Campaigns []any `json:"campaigns"`
		Pools     []any `json:"pools"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ov))
	require.Empty(t, ov.Campaigns, "a new server has no campaign")
	require.Equal(t, http.StatusOK, get(base+"?token=s3cret").StatusCode)
	require.Equal(t, http.StatusOK, get(base+"api/overview").StatusCode, "the cookie the token set")
	require.Equal(t, http.StatusNotFound, get(base+"api/campaigns/nope").StatusCode)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("gleaner dashboard did not stop")
	}
}

// cookieJar keeps every cookie for every URL (one test server).
type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) { j.cookies = append(j.cookies, cs...) }
func (j *cookieJar) Cookies(*url.URL) []*http.Cookie          { return j.cookies }

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gleaner-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(k)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "dash.crt"), filepath.Join(dir, "dash.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	return certFile, keyFile
}
