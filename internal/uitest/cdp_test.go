package uitest

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// EnvChromium names the Chromium (or Chrome) binary, overriding PATH.
const EnvChromium = "GLEANER_CHROMIUM"

// findChromium returns the browser to drive, or "".
func findChromium() string {
	if p := os.Getenv(EnvChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// ci reports whether CI=true: missing tools then fail the tests that need
// them instead of skipping them.
func ci() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

// browser is a headless Chromium driven over the Chrome DevTools protocol,
// through one page target.
type browser struct {
	t    testing.TB
	cmd  *exec.Cmd
	done chan struct{}
	log  *tailBuffer
	ws   *websocket.Conn

	mu     sync.Mutex
	nextID int
}

// startBrowser starts headless Chromium with the flags that work in a
// sandbox without a network (no background traffic, no GPU, no setuid
// sandbox, a fresh profile) and connects to its first page. It is killed
// when t ends.
func startBrowser(t testing.TB, bin string, width, height int) *browser {
	t.Helper()
	profile := t.TempDir()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
		"--user-data-dir=" + profile,
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"--remote-allow-origins=*",
		fmt.Sprintf("--window-size=%d,%d", width, height),
		"about:blank",
	}
	b := &browser{t: t, done: make(chan struct{}), log: &tailBuffer{max: 8 << 10}}
	b.cmd = exec.Command(bin, args...)
	b.cmd.Stdout, b.cmd.Stderr = b.log, b.log
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() { _ = b.cmd.Wait(); close(b.done) }()
	t.Cleanup(b.close)

	// With --remote-debugging-port=0 Chromium picks a port and writes it to
	// DevToolsActivePort in the profile.
	var port string
	// Chromium starts in a second alone, in tens on a loaded 2-core machine.
	deadline := time.Now().Add(2 * time.Minute)
	for port == "" {
		if data, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort")); err == nil {
			if line, _, _ := strings.Cut(string(data), "\n"); line != "" && strings.Contains(string(data), "\n") {
				port = line
			}
		}
		select {
		case <-b.done:
			t.Fatalf("%s exited at start:\n%s", bin, b.log)
		default:
		}
		if port == "" {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not open its DevTools port in 2m:\n%s", bin, b.log)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	base := "http://127.0.0.1:" + port
	var targets []struct {
		Type, URL            string
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	resp, err := http.Get(base + "/json/list")
	if err != nil {
		t.Fatalf("DevTools target list: %v", err)
	}
	err = json.NewDecoder(resp.Body).Decode(&targets)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("DevTools target list: %v", err)
	}
	var wsURL string
	for _, tg := range targets {
		if tg.Type == "page" {
			wsURL = tg.WebSocketDebuggerURL
			break
		}
	}
	if wsURL == "" {
		t.Fatalf("no page target in %+v", targets)
	}
	cfg, err := websocket.NewConfig(wsURL, base)
	if err != nil {
		t.Fatal(err)
	}
	if b.ws, err = websocket.DialConfig(cfg); err != nil {
		t.Fatalf("DevTools websocket %s: %v", wsURL, err)
	}
	b.ws.MaxPayloadBytes = 64 << 20 // screenshots
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false,
	}, nil)
	return b
}

func (b *browser) close() {
	if b.ws != nil {
		_ = b.ws.Close()
	}
	if b.cmd.Process != nil {
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-b.done
	if b.t.Failed() {
		b.t.Logf("chromium output (tail):\n%s", b.log)
	}
}

// call sends one DevTools command and decodes its result into out (when
// not nil), skipping the events that arrive meanwhile.
func (b *browser) call(method string, params any, out any) {
	b.t.Helper()
	if err := b.callErr(method, params, out); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) callErr(method string, params any, out any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextID++
	id := b.nextID
	if err := websocket.JSON.Send(b.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	_ = b.ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := websocket.JSON.Receive(b.ws, &msg); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if msg.ID != id {
			continue // an event, or a late answer
		}
		if msg.Error != nil {
			return fmt.Errorf("%s: %d %s", method, msg.Error.Code, msg.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(msg.Result, out)
		}
		return nil
	}
}

// navigate loads url in the page (not waiting for scripts; see waitText).
func (b *browser) navigate(url string) {
	b.t.Helper()
	var res struct {
		ErrorText string `json:"errorText"`
	}
	b.call("Page.navigate", map[string]any{"url": url}, &res)
	if res.ErrorText != "" {
		b.t.Fatalf("navigating to %s: %s", url, res.ErrorText)
	}
}

// eval evaluates a JavaScript expression in the page and returns its
// value as JSON (awaiting promises).
func (b *browser) eval(expr string) (json.RawMessage, error) {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := b.callErr("Runtime.evaluate", map[string]any{
		"expression": expr, "returnByValue": true, "awaitPromise": true,
	}, &res); err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, fmt.Errorf("evaluating %q: %s", expr, res.ExceptionDetails.Text)
	}
	return res.Result.Value, nil
}

// textJS is the page's visible text and that of its frames: the Temporal
// UI renders markdown (summaries, details) in sandboxed iframes, whose
// srcdoc is all a script outside them can read.
const textJS = `(() => {
  if (!document.body) return "";
  const frames = [...document.querySelectorAll("iframe")].map(f => {
    try { return f.contentDocument.body.innerText; } catch (e) { return f.srcdoc || ""; }
  });
  return [document.body.innerText, ...frames].join("\n");
})()`

// text is the page's visible text, with its frames'.
func (b *browser) text() string {
	raw, err := b.eval(textJS)
	if err != nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// waitText waits until the page's text contains every string of want (the
// UI is a JavaScript app that fetches from the server after loading), then
// gives it a moment to settle; it returns the text.
func (b *browser) waitText(ctx context.Context, want ...string) string {
	b.t.Helper()
	var txt string
	stuckSince := time.Now()
	for {
		txt = b.text()
		blank, failed := strings.TrimSpace(txt) == "", strings.Contains(txt, uiErrorPage)
		if !blank && !failed {
			stuckSince = time.Now()
		} else if time.Since(stuckSince) > stuckReload {
			// Still nothing rendered (a script that failed to load on a
			// loaded machine), or the UI's error page (a request of its
			// own to the server failed, and the app does not retry it):
			// load the page again, as a user would.
			what := "blank"
			if failed {
				what = "the web UI's error page"
			}
			b.t.Logf("the page is still %s after %s: reloading it", what, stuckReload)
			b.call("Page.reload", map[string]any{}, nil)
			stuckSince = time.Now()
		}
		missing := ""
		for _, w := range want {
			if !strings.Contains(txt, w) {
				missing = w
				break
			}
		}
		if missing == "" && !failed { // the error page may name what is wanted
			break
		}
		select {
		case <-ctx.Done():
			if missing == "" {
				b.t.Fatalf("the page never got past the web UI's error page; it shows:\n%s", txt)
			}
			b.t.Fatalf("the page never showed %q; it shows:\n%s", missing, txt)
		case <-time.After(250 * time.Millisecond):
		}
	}
	time.Sleep(time.Second) // fonts, icons and the last rows render
	return b.text()
}

// stuckReload is how long waitText lets a page stay blank, or on the web
// UI's error page, before it loads it again.
const stuckReload = 20 * time.Second

// uiErrorPage is what the Temporal web UI shows when one of its requests
// to the server failed ("500 … Internal Error"): CI saw it stay for the
// whole 4 minutes on a loaded machine; a reload shows the page.
const uiErrorPage = "Uh oh. There's an error."

// screenshot returns a PNG of the viewport.
func (b *browser) screenshot() []byte {
	b.t.Helper()
	var res struct {
		Data string `json:"data"`
	}
	b.call("Page.captureScreenshot", map[string]any{"format": "png"}, &res)
	png, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	return png
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Chromium's headless chatter about D-Bus is noise here.
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(t.buf)))
	for sc.Scan() {
		if !strings.Contains(sc.Text(), "dbus") {
			out = append(out, sc.Text())
		}
	}
	return strings.Join(out, "\n")
}

var _ io.Writer = (*tailBuffer)(nil)
