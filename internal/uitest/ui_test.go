package uitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// EnvScreenshot, set to 1, makes TestTemporalUIShowsCampaign write its
// screenshots to docs/ as well (to refresh the committed ones).
const EnvScreenshot = "GLEANER_UI_SCREENSHOT"

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// listColumns are the workflow list's columns the test shows: the UI keeps
// them per namespace in localStorage, and custom search attributes can be
// columns. A person sets the same with the list's column chooser.
var listColumns = []string{"Status", "Workflow ID", "Type", "GleanerKind", "GleanerStatus",
	"GleanerTrial", "GleanerBestScore", "GleanerTrialsDone", "End"}

// A real campaign of 3 go-mlp trials runs on a dev server with its web UI;
// headless Chromium then opens the UI's workflow list filtered by
// `GleanerCampaign = "<name>"`, sees the campaign and its trials, follows
// the campaign's link and sees the summary that client.Submit set and the
// leaderboard in its details.
func TestTemporalUIShowsCampaign(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		if ci() {
			t.Fatalf("CI=true but no chromium (apt-get install chromium, or set %s)", EnvChromium)
		}
		t.Skipf("skipping: no chromium on PATH (apt-get install chromium, or set %s)", EnvChromium)
	}
	srv := testenv.DevServer(t, devserver.Options{UI: true})

	const tq, name = "uitest", "ui-spirals"
	testenv.Worker(t, srv, tq, nil)
	spec := testenv.MLPSpec(t, name, 3, 3, 40, 5) // 3 short trials (40 steps of 5 ms)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	gc := client.New(srv.Client(), client.Options{TaskQueue: tq, UIBase: srv.UIURL(), Namespace: srv.Namespace()})
	camp, err := gc.Submit(ctx, spec)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	var res workflows.CampaignResult
	if err := srv.Client().GetWorkflow(ctx, camp.WorkflowID, camp.RunID).Get(ctx, &res); err != nil {
		t.Fatalf("campaign %s: %v", camp.WorkflowID, err)
	}
	t.Logf("campaign done: %+v", res)
	summary := fmt.Sprintf("hpo campaign %s: 3 trials, min val_loss", name)

	// The list page, filtered by the visibility query a user types.
	b := startBrowser(t, chromium, 1600, 900)
	ui := srv.UIURL()
	ns := url.PathEscape(srv.Namespace())
	b.navigate(ui + "/namespaces/" + ns + "/workflows")
	b.waitText(ctx, "Workflows")
	cols := make([]map[string]string, len(listColumns))
	for i, c := range listColumns {
		cols[i] = map[string]string{"label": c}
	}
	stored, _ := json.Marshal(map[string]any{srv.Namespace(): cols})
	if _, err := b.eval(fmt.Sprintf(`localStorage.setItem("namespace-workflow-table-columns", %q)`, stored)); err != nil {
		t.Fatal(err)
	}
	query := fmt.Sprintf("%s = %q", workflows.GleanerCampaign.GetName(), name)
	listURL := ui + "/namespaces/" + ns + "/workflows?query=" + url.QueryEscape(query)
	b.navigate(listURL)
	trial1 := workflows.TrialWorkflowID(camp.WorkflowID, 1)
	listText := b.waitText(ctx, camp.WorkflowID, trial1, workflows.TrialWorkflowID(camp.WorkflowID, 3))
	for _, want := range []string{workflows.CampaignWorkflowName, workflows.TrialWorkflowName, "GleanerStatus"} {
		if !strings.Contains(listText, want) {
			t.Errorf("the filtered list does not show %q:\n%s", want, listText)
		}
	}
	if strings.Contains(listText, "gleaner-campaign-other") {
		t.Errorf("the filter %q let another campaign through", query)
	}
	listPNG := b.screenshot()

	// The campaign's own page, through the list's link to it.
	href := linkTo(t, b, camp.WorkflowID)
	b.navigate(href)
	b.waitText(ctx, camp.WorkflowID, "User Metadata")
	// The summary and the markdown details are on the User Metadata tab.
	href = linkTo(t, b, "User Metadata")
	b.navigate(href)
	want := []string{summary, camp.WorkflowID, "Completed"}
	if res.Best != nil {
		want = append(want, res.Best.TrialID) // the leaderboard in the details
	}
	b.waitText(ctx, want...)
	detailPNG := b.screenshot()

	dir := t.TempDir()
	writePNG(t, filepath.Join(dir, "ui-campaign-list.png"), listPNG)
	writePNG(t, filepath.Join(dir, "ui-campaign.png"), detailPNG)
	if os.Getenv(EnvScreenshot) == "1" {
		writePNG(t, filepath.Join("..", "..", "docs", "ui-campaign-list.png"), listPNG)
		writePNG(t, filepath.Join("..", "..", "docs", "ui-campaign.png"), detailPNG)
		t.Logf("wrote docs/ui-campaign.png and docs/ui-campaign-list.png")
	}
}

// linkTo is the address of the page's first link whose text is text.
func linkTo(t *testing.T, b *browser, text string) string {
	t.Helper()
	raw, err := b.eval(fmt.Sprintf(`(() => { const a = [...document.querySelectorAll("a")].find(a => a.textContent.trim() === %q); return a ? a.href : ""; })()`, text))
	if err != nil {
		t.Fatal(err)
	}
	var href string
	_ = json.Unmarshal(raw, &href)
	if href == "" {
		t.Fatalf("the page has no link %q:\n%s", text, b.text())
	}
	return href
}

func writePNG(t *testing.T, path string, png []byte) {
	t.Helper()
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("%s: not a PNG (%d bytes)", path, len(png))
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
