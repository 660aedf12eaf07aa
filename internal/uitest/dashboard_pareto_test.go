package uitest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/dashboard"
)

// paretoTrainer is a trainer of two objectives that trade off (ZDT1's,
// Zitzler, Deb and Thiele 2000: error = x, latency grows as error falls
// unless y is 0) and a constrained metric, mem_gb = 8y: it reports three
// times and exits.
const paretoTrainer = `import json, math, os, time
p = json.load(open(os.environ["GLEANER_PARAMS_FILE"]))
x, y = float(p["x"]), float(p["y"])
g = 1 + 9 * y
latency = 10 * g * (1 - math.sqrt(x / g))
with open(os.environ["GLEANER_REPORT_FILE"], "a") as f:
    for s in (1, 2, 3):
        f.write(json.dumps({"step": s, "samples": 100 * s, "metrics": {"error": x, "latency_ms": latency + 3 - s, "mem_gb": 8 * y}}) + "\n")
        f.flush()
        time.sleep(0.2)
`

// paretoSpec is a campaign of two objectives and a constraint of
// paretoTrainer (%s: its path): random search, 16 trials.
const paretoSpec = `name: dash-pareto
command: [python3, %s]
space:
  - {name: x, type: float, min: 0, max: 1}
  - {name: y, type: float, min: 0, max: 1}
search: {algorithm: random, seed: 3}
objectives:
  - {metric: error, mode: min}
  - {metric: latency_ms, mode: min}
constraints:
  - {metric: mem_gb, max: 5}
budget: {max_trials: 16, max_concurrent: 4}
trial: {grace_period: 10s}
`

// A campaign of two objectives and a constraint on the demo: its page
// shows the Pareto front panel with as many front points as the
// campaign's status has on its front, every trial with both values
// plotted, the infeasible ones marked, the hypervolume and reference
// point stated; the table has a column per objective and marks the
// front; a click on a front point selects its trial in the table.
func TestDashboardShowsTheParetoFront(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("skipping: the trainer of two objectives is python3's, and there is none on PATH")
	}
	chromium, cli, bin := demoTools(t)
	work, state := t.TempDir(), t.TempDir()
	trainer, spec := filepath.Join(work, "zdt1.py"), filepath.Join(work, "pareto.yaml")
	if err := os.WriteFile(trainer, []byte(paretoTrainer), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(paretoSpec, trainer)), 0o644); err != nil {
		t.Fatal(err)
	}
	dash := startDemo(t, bin, work, cli, state, "--campaign", spec, "--nodes", "static:4,gpus=none")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var name string
	waitFor(ctx, t, "the campaign of two objectives ends", func() bool {
		var ov dashboard.Overview
		if getJSON(dash+"api/overview", &ov) != nil || len(ov.Campaigns) == 0 {
			return false
		}
		name = ov.Campaigns[0].Name
		return ov.Campaigns[0].Closed.Unix() > 0
	})
	var page dashboard.CampaignPage
	if err := getJSON(dash+"api/campaigns/"+name+"?since=0", &page); err != nil {
		t.Fatal(err)
	}
	f := page.Status.Pareto
	if len(page.Spec.Objectives) != 2 || f == nil || f.Size == 0 || len(f.Trials) != f.Size {
		t.Fatalf("the page's objectives are %v and its front %+v", page.Spec.Objectives, f)
	}
	valued := 0
	for _, v := range page.Rows.Values {
		if v != nil {
			valued++
		}
	}
	infeasible := len(page.Rows.Infeasible)

	b := startBrowser(t, chromium, 1600, 1200)
	b.navigate(dash + "#/c/" + name)
	waitJS(ctx, t, b, `document.querySelector("#pareto .plot").dataset.front > 0 && document.querySelector("#t-table table")`)
	pf := dataset(t, b, "#pareto .plot")
	for key, want := range map[string]string{"front": strconv.Itoa(f.Size), "points": strconv.Itoa(valued), "x": "error", "y": "latency_ms"} {
		if pf[key] != want {
			t.Errorf("the Pareto panel's data-%s = %q, want %q", key, pf[key], want)
		}
	}
	if n, _ := strconv.Atoi(pf["infeasible"]); n != infeasible || n == 0 {
		t.Errorf("the Pareto panel marks %s trials infeasible; the page has %d (mem_gb > 5)", pf["infeasible"], infeasible)
	}
	if n, _ := strconv.Atoi(pf["staircase"]); n == 0 || n > f.Size {
		t.Errorf("the staircase joins %s trials; the front has %d", pf["staircase"], f.Size)
	}
	txt := b.text()
	for _, want := range []string{"Pareto front", "hypervolume", "reference point", "(derived)", "error (min), the first of 2 objectives",
		"error (min)", "latency_ms (min)", "feasible", "infeasible", "on the Pareto front"} {
		if !strings.Contains(txt, want) {
			t.Errorf("the campaign's page does not say %q:\n%s", want, txt)
		}
	}
	// Every front trial is marked in the table (all trials fit its page).
	raw, err := b.eval(`document.querySelectorAll("#t-table .on-front").length`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(string(raw)); n != f.Size {
		t.Errorf("the table marks %d trials on the front; the front has %d", n, f.Size)
	}
	if os.Getenv(EnvScreenshot) == "1" {
		writePNG(t, filepath.Join("..", "..", "docs", "dashboard-pareto.png"), b.screenshot())
	}

	// A click on a front point selects its trial in the table.
	raw, err = b.eval(`(() => {
		const cv = document.querySelector("#pareto canvas"), r = cv.getBoundingClientRect();
		const p = JSON.parse(document.querySelector("#pareto .plot").dataset.frontAt)[0];
		cv.dispatchEvent(new MouseEvent("click", {clientX: r.left + p[0], clientY: r.top + p[1], bubbles: true}));
		return p[2];
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	_ = json.Unmarshal(raw, &id)
	waitJS(ctx, t, b, `document.querySelector("#t-detail h2")`)
	raw, err = b.eval(`document.querySelector("#t-table tr.sel").dataset.id`)
	if err != nil || !strings.Contains(string(raw), id) || id == "" {
		t.Errorf("clicking front trial %q selected %s (%v)", id, raw, err)
	}
}
