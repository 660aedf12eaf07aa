package uitest

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/dashboard"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// The demo (`gleaner dev`, what `make demo` runs) serves the dashboard;
// headless Chromium opens every view while the demo's campaign runs and
// after it ends, and checks that each chart holds the campaign's data as
// the dashboard's API and the campaign's export give it: every trial with
// a value in the optimisation history, the parallel coordinates and the
// slices, every trial in the table, curves, importance, the timeline; and
// on the pool's page the nodes and the trials that held them, the
// allocation log, the throughput curves and the harvest figures.
func TestDashboardOnTheDemo(t *testing.T) {
	chromium, cli, bin := demoTools(t)
	work, state := t.TempDir(), t.TempDir()
	dash := startDemo(t, bin, work, cli, state)
	t.Logf("dashboard at %s", dash)

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// The demo's campaign, once the overview lists it with a trial ended.
	var name string
	waitFor(ctx, t, "the overview lists the demo's campaign with a trial ended", func() bool {
		var ov dashboard.Overview
		if getJSON(dash+"api/overview", &ov) != nil || len(ov.Campaigns) == 0 {
			return false
		}
		name = ov.Campaigns[0].Name
		return ov.Campaigns[0].TrialsDone >= 2 && len(ov.Pools) > 0
	})

	b := startBrowser(t, chromium, 1600, 1200)
	shots := map[string][]byte{}

	// The overview.
	b.navigate(dash)
	waitJS(ctx, t, b, `document.querySelector("#campaigns tr[data-campaign]") && document.querySelector("#pools tr[data-pool='default']")`)
	txt := b.text()
	for _, want := range []string{name, "default", "Campaigns", "Pools"} {
		if !strings.Contains(txt, want) {
			t.Errorf("the overview does not show %q:\n%s", want, txt)
		}
	}
	shots["dashboard-overview.png"] = b.screenshot()

	// The pool while the campaign runs: its trials hold nodes.
	b.navigate(dash + "#/p/default")
	waitJS(ctx, t, b, `+document.querySelector("#nodes .plot").dataset.held > 0 && +document.querySelector("#solves table").dataset.rows > 0 && document.querySelector("#throughput .slices").dataset.trials > 0`)
	var pool dashboard.PoolPage
	if err := getJSON(dash+"api/pools/default", &pool); err != nil {
		t.Fatal(err)
	}
	nodes := dataset(t, b, "#nodes .plot")
	if n, _ := strconv.Atoi(nodes["nodes"]); n != len(pool.Nodes) || n == 0 {
		t.Errorf("node × time shows %s nodes, the pool's log has %d", nodes["nodes"], len(pool.Nodes))
	}
	for _, sp := range pool.Spans {
		if sp.Trial != "" && !strings.HasPrefix(sp.Trial, "gleaner-campaign-"+name) {
			t.Errorf("a span held by %q, not a trial of %s", sp.Trial, name)
		}
	}
	if hv := dataset(t, b, "#harvest .plot"); hv["points"] == "0" || hv["used"] == "0" {
		t.Errorf("the harvest shows no samples/s or no node-hours used: %v", hv)
	}
	tp := dataset(t, b, "#throughput .slices .plot")
	if tp["measured"] == "0" && tp["predicted"] == "0" {
		t.Errorf("a registered trial's throughput chart holds neither measured nor predicted points: %v", tp)
	}
	shots["dashboard-pool.png"] = b.screenshot()

	// The dashboard's load on the Temporal server: 10 pages, then 1,
	// polling the campaign as the page does (the browser's page too).
	for _, pages := range []int{10, 1} {
		t.Logf("%d page(s) polling campaign %s: %.1f calls/s to the Temporal server", pages, name, pollLoad(t, dash, name, pages, 6*time.Second))
	}

	// The campaign, once it ended: every chart against its export.
	waitFor(ctx, t, "the demo's campaign ends", func() bool {
		var ov dashboard.Overview
		return getJSON(dash+"api/overview", &ov) == nil && len(ov.Campaigns) > 0 && ov.Campaigns[0].Closed.Unix() > 0
	})
	b.navigate(dash + "#/c/" + name)
	rows := exportCSV(t, dash+"api/campaigns/"+name+"/export?format=csv")
	valued := 0 // trials with a score: their best val_loss
	for _, r := range rows {
		if r["best_val_loss"] != "" {
			valued++
		}
	}
	if len(rows) != 20 || valued == 0 {
		t.Fatalf("the export has %d trials (%d with val_loss); the demo runs 20", len(rows), valued)
	}
	// The page's data may be one refresh (Options.Refresh) older than the
	// campaign's end; it must catch up with the export.
	waitJS(ctx, t, b, fmt.Sprintf(`document.querySelector("#history .plot").dataset.points == %d && document.querySelector("#timeline .plot").dataset.trials > 0 && document.querySelector("#curves .plot").dataset.curves > 0 && document.querySelector("#t-table table")`, valued))
	checks := []struct{ sel, key, want string }{
		{"#history .plot", "points", strconv.Itoa(valued)},
		{"#parallel .plot", "lines", strconv.Itoa(valued)},
		{"#parallel .plot", "selected", strconv.Itoa(valued)},
		{"#parallel .plot", "axes", "5"}, // 4 parameters and the objective
		{"#t-table table", "rows", "20"},
		{"#importance .plot", "params", "4"},
		{".slice[data-param=lr] .plot", "points", strconv.Itoa(valued)},
	}
	for _, c := range checks {
		if got := dataset(t, b, c.sel)[c.key]; got != c.want {
			t.Errorf("%s data-%s = %q, want %q", c.sel, c.key, got, c.want)
		}
	}
	var best float64
	for _, r := range rows {
		if v, err := strconv.ParseFloat(r["best_val_loss"], 64); err == nil && (best == 0 || v < best) {
			best = v
		}
	}
	if got, _ := strconv.ParseFloat(dataset(t, b, "#history .plot")["best"], 64); got != best {
		t.Errorf("the history's best so far ends at %v; the export's best val_loss is %v", got, best)
	}
	// The campaign's best, as its status says it, is the history's.
	var page dashboard.CampaignPage
	if err := getJSON(dash+"api/campaigns/"+name+"?since=0", &page); err != nil || page.Status.Best == nil {
		t.Fatalf("the campaign's page: %v (best %v)", err, page.Status.Best)
	}
	if page.Status.Best.Score != best {
		t.Errorf("the campaign's best is %v; the history's best so far %v", page.Status.Best.Score, best)
	}
	if tl := dataset(t, b, "#timeline .plot"); tl["trials"] != "20" {
		t.Errorf("the timeline shows %s trials, want the demo's 20: %v", tl["trials"], tl)
	}
	shots["dashboard-campaign.png"] = b.screenshot()

	// Brushing: drag on the objective's axis over its best half selects
	// fewer trials, and the table shows those.
	raw, err := b.eval(`(() => {
		const cv = document.querySelector("#parallel canvas"), r = cv.getBoundingClientRect();
		const f = JSON.parse(document.querySelector("#parallel .plot").dataset.frame);
		const x = r.left + f.axes[f.axes.length - 1], top = r.top + f.top, bottom = r.top + f.bottom;
		const ev = (type, y) => cv.dispatchEvent(new MouseEvent(type, {clientX: x, clientY: y, bubbles: true}));
		ev("mousedown", (top + bottom) / 2); ev("mousemove", bottom); ev("mouseup", bottom);
		const sel = +document.querySelector("#parallel .plot").dataset.selected;
		return [sel, +document.querySelector("#t-table table").dataset.rows];
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	var brushed [2]int
	_ = json.Unmarshal(raw, &brushed)
	if brushed[0] <= 0 || brushed[0] >= valued || brushed[1] != brushed[0] {
		t.Errorf("brushing the lower half of the objective's axis selected %d of %d trials and the table shows %d", brushed[0], valued, brushed[1])
	}
	// A trial's detail opens from the table.
	if _, err := b.eval(`document.querySelector("#t-table tbody tr").click()`); err != nil {
		t.Fatal(err)
	}
	waitJS(ctx, t, b, `document.querySelector("#t-detail h2")`)
	if _, err := b.eval(`document.querySelector("#trials").scrollIntoView()`); err != nil {
		t.Fatal(err)
	}
	shots["dashboard-trials.png"] = b.screenshot()
	if _, err := b.eval(`document.querySelector("#timeline").scrollIntoView()`); err != nil {
		t.Fatal(err)
	}
	shots["dashboard-timeline.png"] = b.screenshot()

	dir := t.TempDir()
	for f, png := range shots {
		writePNG(t, filepath.Join(dir, f), png)
		if os.Getenv(EnvScreenshot) == "1" {
			writePNG(t, filepath.Join("..", "..", "docs", f), png)
		}
	}
}

// ashaSpec is a small ASHA campaign of the demo's trainer: rungs at
// 3,200, 9,600 and 28,800 samples.
const ashaSpec = `name: dash-asha
command: [bin/go-mlp]
space:
  - {name: lr, type: float, min: 0.003, max: 0.5, log: true}
  - {name: hidden, type: int, min: 4, max: 64, log: true}
  - {name: batch, type: choice, choices: [16, 32, 64, 128]}
search:
  algorithm: asha
  budget_unit: samples
  asha: {variant: promotion, min_budget: 3200, max_budget: 28800, reduction_factor: 3}
objective: {metric: val_loss, mode: min}
budget: {max_trials: 9, max_concurrent: 3}
resources: {min_nodes: 1, max_nodes: 2}
trial: {grace_period: 10s}
`

// An ASHA campaign on the demo: its learning curves show the rungs, and
// its trials their stages, in the table and in the curves' view.
func TestDashboardShowsRungs(t *testing.T) {
	chromium, cli, bin := demoTools(t)
	work, state := t.TempDir(), t.TempDir()
	spec := filepath.Join(work, "asha.yaml")
	if err := os.WriteFile(spec, []byte(ashaSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	dash := startDemo(t, bin, work, cli, state, "--campaign", spec, "--nodes", "static:4,gpus=none")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var name string
	waitFor(ctx, t, "the ASHA campaign ends", func() bool {
		var ov dashboard.Overview
		if getJSON(dash+"api/overview", &ov) != nil || len(ov.Campaigns) == 0 {
			return false
		}
		name = ov.Campaigns[0].Name
		return ov.Campaigns[0].Closed.Unix() > 0
	})
	var curves dashboard.Curves
	if err := getJSON(dash+"api/campaigns/"+name+"/curves?top=9", &curves); err != nil {
		t.Fatal(err)
	}
	if curves.BoundariesKind != "rung" || len(curves.Boundaries) != 3 || curves.Boundaries[0] != 3200 || curves.Boundaries[2] != 28800 {
		t.Fatalf("the curves' boundaries are %s %v, want rungs at 3200, 9600, 28800", curves.BoundariesKind, curves.Boundaries)
	}
	staged := 0
	for _, c := range curves.Curves {
		if c.Stage != "" {
			staged++
		}
	}
	if staged == 0 {
		t.Errorf("no curve names its trial's stage (rung): %+v", curves.Curves)
	}
	b := startBrowser(t, chromium, 1600, 1200)
	b.navigate(dash + "#/c/" + name)
	waitJS(ctx, t, b, `document.querySelector("#curves .plot").dataset.boundaries == 3 && document.querySelector("#t-table table")`)
	if txt := b.text(); !strings.Contains(txt, "rung boundaries") {
		t.Errorf("the learning curves' legend does not name the rung boundaries:\n%s", txt)
	}
	// The table's stage column holds the trials' rungs.
	raw, err := b.eval(`[...document.querySelectorAll("#t-table tbody tr")].map(r => r.children[3].textContent).filter(s => s).length`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(string(raw)); n == 0 {
		t.Errorf("no trial shows its stage in the table:\n%s", b.text())
	}
	if os.Getenv(EnvScreenshot) == "1" {
		writePNG(t, filepath.Join("..", "..", "docs", "dashboard-asha.png"), b.screenshot())
	}
}

// demoTools are what a test of the demo in a browser needs: Chromium, the
// temporal CLI and a gleaner binary built from this checkout.
func demoTools(t *testing.T) (chromium, cli, bin string) {
	t.Helper()
	if chromium = findChromium(); chromium == "" {
		if ci() {
			t.Fatalf("CI=true but no chromium (apt-get install chromium, or set %s)", EnvChromium)
		}
		t.Skipf("skipping: no chromium on PATH (apt-get install chromium, or set %s)", EnvChromium)
	}
	cli = testenv.SkipIfNoCLI(t)
	bin = filepath.Join(t.TempDir(), "gleaner")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/gleaner-hpc/gleaner/cmd/gleaner").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return chromium, cli, bin
}

// startDemo runs `gleaner dev` in dir, each port free, and returns the
// dashboard's URL once it serves.
func startDemo(t *testing.T, bin, dir, cli, state string, extra ...string) string {
	t.Helper()
	port := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	cmd := exec.Command(bin, "dev", "--port", port(), "--ui-port", port(), "--dashboard-port", port(), "--db", "",
		"--data-dir", filepath.Join(state, "data"), "--interval", "2s")
	cmd.Args = append(cmd.Args, extra...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), devserver.EnvCLI+"="+cli, "XDG_STATE_HOME="+state)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr tailBuffer
	stderr.max = 16 << 10
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	found := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		re := regexp.MustCompile(`Gleaner dashboard: (http://\S+/)`)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		_ = cmd.Wait()
		mu.Lock()
		defer mu.Unlock()
		if t.Failed() {
			t.Logf("gleaner dev printed:\n%s\nstderr:\n%s", strings.Join(lines, "\n"), stderr.String())
		}
	})
	select {
	case url := <-found:
		return url
	case <-done:
		t.Fatalf("gleaner dev exited before serving the dashboard; stderr:\n%s", stderr.String())
	case <-time.After(4 * time.Minute):
		t.Fatalf("gleaner dev served no dashboard within 4 minutes; stderr:\n%s", stderr.String())
	}
	return ""
}

func getJSON(url string, out any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// exportCSV reads the campaign's CSV export as a map per trial.
func exportCSV(t *testing.T, url string) []map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	recs, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %v (%d records)", url, err, len(recs))
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// waitFor waits until cond holds, polling.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s", what)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// waitJS waits until the expression is truthy in the page.
func waitJS(ctx context.Context, t *testing.T, b *browser, expr string) {
	t.Helper()
	for {
		raw, err := b.eval("!!(" + expr + ")")
		if err == nil && string(raw) == "true" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s in the page; it shows:\n%s", expr, b.text())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// dataset is the data-* attributes of the page's first element matching
// sel.
func dataset(t *testing.T, b *browser, sel string) map[string]string {
	t.Helper()
	raw, err := b.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? Object.assign({}, e.dataset) : null; })()`, sel))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if json.Unmarshal(raw, &m) != nil || m == nil {
		t.Fatalf("the page has no %s:\n%s", sel, b.text())
	}
	return m
}

// pollLoad polls a campaign's page from pages pollers every 2 s, as open
// pages do, for d, and returns the calls per second the dashboard made to
// the Temporal server meanwhile.
func pollLoad(t *testing.T, dash, name string, pages int, d time.Duration) float64 {
	t.Helper()
	var before, after struct {
		Calls int64 `json:"calls"`
	}
	if err := getJSON(dash+"api/stats", &before); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range pages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var version int64
			for time.Since(start) < d {
				var p dashboard.CampaignPage
				if getJSON(fmt.Sprintf("%sapi/campaigns/%s?since=%d", dash, name, version), &p) == nil {
					version = p.Version
				}
				time.Sleep(2 * time.Second) // a page's poll period, not a wait for a condition
			}
		}()
	}
	wg.Wait()
	if err := getJSON(dash+"api/stats", &after); err != nil {
		t.Fatal(err)
	}
	return float64(after.Calls-before.Calls) / time.Since(start).Seconds()
}
