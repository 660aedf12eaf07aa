package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// cliRun runs `gleaner args...` through Run and returns its stdout,
// stderr and exit code.
func cliRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(args, &out, &errOut)
	t.Logf("$ gleaner %s  → exit %d\n%s%s", strings.Join(args, " "), ExitCode(err), out.String(), errOut.String())
	return out.String(), errOut.String(), ExitCode(err)
}

// clearConnectionEnv keeps the test's environment from configuring the
// CLI behind its back.
func clearConnectionEnv(t *testing.T) {
	for _, k := range []string{client.EnvAddress, client.EnvNamespace, client.EnvAPIKey, client.EnvTLS,
		client.EnvTLSCert, client.EnvTLSKey, client.EnvTLSCA, client.EnvTLSServerName, client.EnvTaskQueue, EnvUI} {
		t.Setenv(k, "")
	}
}

const e2eSpec = `# a small campaign of the Go example trainer
name: cli-e2e
pool: cli-e2e
command: [%BIN%]
space:
  - {name: lr, type: float, min: 0.01, max: 0.5, log: true}
  - {name: hidden, type: int, min: 4, max: 32}
  - {name: batch, type: choice, choices: [32]}
  - {name: steps, type: choice, choices: [40]}
  - {name: step_ms, type: choice, choices: [5]}
  - {name: report_every, type: choice, choices: [5]}
  - {name: checkpoint_every, type: choice, choices: [10]}
objective: {metric: val_loss, mode: min}
budget: {max_trials: 4, max_concurrent: 2}
resources: {min_nodes: 1, max_nodes: 2}
trial: {grace_period: 5s, max_restarts: 2}
`

// The CLI against a real dev server and an in-process worker: setup,
// submit --wait, status, leaderboard, trials, pool status, a rejected
// pause, an unknown campaign and an invalid spec, with their exit codes.
func TestCLIEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Temporal dev server")
	}
	clearConnectionEnv(t)
	// No search attributes: `gleaner setup` registers them.
	srv := testenv.DevServer(t, devserver.Options{SearchAttributes: map[string]string{}})
	const tq = "cli-e2e"
	conn := []string{"--address", srv.Address(), "--namespace", srv.Namespace(), "--task-queue", tq, "--ui", "http://ui.test"}
	with := func(args ...string) []string { return append(args, conn...) }

	// setup registers every attribute, then finds them all there.
	out, _, code := cliRun(t, with("setup")...)
	if code != ExitOK || strings.Count(out, " registered\n") != len(workflows.SearchAttributes) {
		t.Fatalf("setup: exit %d, want 0 and %d registered:\n%s", code, len(workflows.SearchAttributes), out)
	}
	out, _, code = cliRun(t, with("setup")...)
	if code != ExitOK || strings.Count(out, "already registered") != len(workflows.SearchAttributes) {
		t.Fatalf("setup again: exit %d, want 0 and all already registered:\n%s", code, out)
	}

	// An in-process worker with four CPU slots and a fast pool.
	testenv.Worker(t, srv, tq, nil)

	dir := t.TempDir()
	bin := testenv.GoMLP(t)
	specPath := filepath.Join(dir, "campaign.yaml")
	if err := os.WriteFile(specPath, []byte(strings.ReplaceAll(e2eSpec, "%BIN%", bin)), 0o644); err != nil {
		t.Fatal(err)
	}

	// submit --wait: the id, the link, the progress, the leaderboard.
	out, _, code = cliRun(t, with("submit", "-f", specPath, "--wait", "--interval", "500ms")...)
	if code != ExitOK {
		t.Fatalf("submit --wait: exit %d", code)
	}
	for _, want := range []string{
		"submitted campaign cli-e2e", "gleaner-campaign-cli-e2e",
		"http://ui.test/namespaces/" + srv.Namespace() + "/workflows/gleaner-campaign-cli-e2e",
		"4/4 trials", "campaign cli-e2e completed: 4 completed", "RANK",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("submit --wait output lacks %q", want)
		}
	}
	if strings.Contains(out, "\x1b[") || strings.Contains(out, "\r") {
		t.Errorf("submit --wait wrote terminal control characters to a non-terminal")
	}

	// A second submit of the same name is rejected.
	_, errOut, code := cliRun(t, with("submit", "-f", specPath)...)
	if code != ExitRejected || !strings.Contains(errOut, "already exists") {
		t.Errorf("submit again: exit %d, want %d (already exists)", code, ExitRejected)
	}

	// status --json
	out, _, code = cliRun(t, with("status", "cli-e2e", "--json")...)
	var st statusJSON
	if code != ExitOK {
		t.Fatalf("status --json: exit %d", code)
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v", err)
	}
	if st.State != workflows.CampaignCompleted || st.Completed != 4 || st.Best == nil || st.UIURL == "" {
		t.Errorf("status: %+v, want completed with 4 completed, a best trial and a link", st)
	}
	out, _, code = cliRun(t, with("status", "cli-e2e")...)
	if code != ExitOK || !strings.Contains(out, "state     completed") || !strings.Contains(out, "4/4 ended") {
		t.Errorf("status: exit %d", code)
	}
	out, _, code = cliRun(t, with("status", "cli-e2e", "--watch", "--interval", "200ms")...)
	if code != ExitOK || !strings.Contains(out, "[####################] 4/4 trials") {
		t.Errorf("status --watch: exit %d, want 0 and a full bar", code)
	}

	// leaderboard --json: 4 entries, best (lowest val_loss) first.
	out, _, code = cliRun(t, with("leaderboard", "cli-e2e", "--json")...)
	var lb []workflows.LeaderboardEntry
	if code != ExitOK {
		t.Fatalf("leaderboard --json: exit %d", code)
	}
	if err := json.Unmarshal([]byte(out), &lb); err != nil {
		t.Fatalf("leaderboard --json: %v", err)
	}
	if len(lb) != 4 || !sort.SliceIsSorted(lb, func(i, j int) bool { return lb[i].Score < lb[j].Score }) {
		t.Errorf("leaderboard: %d entries %+v, want 4 sorted by score", len(lb), lb)
	}
	if len(lb) > 0 && (st.Best == nil || lb[0].TrialID != st.Best.TrialID) {
		t.Errorf("leaderboard[0] %s is not the status's best %+v", lb[0].TrialID, st.Best)
	}
	out, _, code = cliRun(t, with("leaderboard", "cli-e2e", "--top", "2")...)
	if code != ExitOK || strings.Count(strings.TrimSpace(out), "\n") != 2 {
		t.Errorf("leaderboard --top 2: exit %d, want a header and 2 rows", code)
	}

	// trials: four completed, with the objective column.
	out, _, code = cliRun(t, with("trials", "cli-e2e")...)
	if code != ExitOK || strings.Count(out, " completed ") != 4 || !strings.Contains(out, "VAL_LOSS") {
		t.Errorf("trials: exit %d, want 4 completed trials and a VAL_LOSS column", code)
	}
	out, _, code = cliRun(t, with("trials", "cli-e2e", "--json")...)
	var trials []workflows.TrialStatus
	if err := json.Unmarshal([]byte(out), &trials); code != ExitOK || err != nil || len(trials) != 4 {
		t.Errorf("trials --json: exit %d, %v, %d trials", code, err, len(trials))
	}

	// pool status: the pool the campaign ran in.
	out, _, code = cliRun(t, with("pool", "status", "cli-e2e")...)
	if code != ExitOK || !strings.Contains(out, "pool      cli-e2e") || !strings.Contains(out, "nodes     4, 0 in use") {
		t.Errorf("pool status: exit %d, want the pool with 4 nodes, none in use", code)
	}
	if !strings.Contains(out, "nodes used") {
		t.Errorf("pool status: no last solve")
	}

	// A finished campaign rejects pause, resume and stop: exit 4.
	for _, verb := range []string{"pause", "resume", "stop"} {
		_, errOut, code = cliRun(t, with(verb, "cli-e2e", "--reason", "test")...)
		if code != ExitRejected || !strings.Contains(errOut, "rejected") {
			t.Errorf("%s of a completed campaign: exit %d, want %d (rejected)", verb, code, ExitRejected)
		}
	}

	// A running campaign: pause, a second pause rejected by the campaign's
	// validator, resume, stop, and status --watch until it has stopped.
	slow := filepath.Join(dir, "slow.yaml")
	spec := strings.NewReplacer("%BIN%", bin, "name: cli-e2e", "name: cli-ctl", "pool: cli-e2e", "pool: cli-ctl",
		"choices: [40]", "choices: [2000]", "choices: [5]}\n  - {name: report_every", "choices: [20]}\n  - {name: report_every").Replace(e2eSpec)
	if err := os.WriteFile(slow, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, code = cliRun(t, with("submit", "-f", slow)...); code != ExitOK {
		t.Fatalf("submit %s: exit %d", slow, code)
	}
	for _, step := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pause", "cli-ctl", "--reason", "lunch"}, ExitOK, "campaign cli-ctl is paused (lunch)"},
		{[]string{"pause", "cli-ctl"}, ExitRejected, "pause rejected: campaign cli-ctl is already paused"},
		{[]string{"resume", "cli-ctl"}, ExitOK, "campaign cli-ctl is running"},
		{[]string{"resume", "cli-ctl"}, ExitRejected, "resume rejected: campaign cli-ctl is not paused"},
		{[]string{"stop", "cli-ctl", "--reason", "enough"}, ExitOK, "enough"},
	} {
		out, errOut, code := cliRun(t, with(step.args...)...)
		if code != step.code || !strings.Contains(out+errOut, step.want) {
			t.Errorf("%v: exit %d, want %d and %q", step.args, code, step.code, step.want)
		}
	}
	out, _, code = cliRun(t, with("status", "cli-ctl", "--watch", "--interval", "200ms")...)
	if code != ExitOK || !strings.Contains(out, "state     stopped") {
		t.Errorf("status --watch of a stopping campaign: exit %d, want 0 and stopped", code)
	}

	// Unknown campaign or pool: exit 3.
	for _, args := range [][]string{
		{"status", "no-such-campaign"}, {"leaderboard", "no-such-campaign"}, {"trials", "no-such-campaign"},
		{"pause", "no-such-campaign"}, {"pool", "status", "no-such-pool"},
	} {
		_, errOut, code = cliRun(t, with(args...)...)
		if code != ExitNotFound || !strings.Contains(errOut, "not found") {
			t.Errorf("%v: exit %d, want %d (not found)", args, code, ExitNotFound)
		}
	}

	// An invalid spec: exit 2 naming the file and the field; nothing starts.
	bad := filepath.Join(dir, "bad.yaml")
	spec = strings.ReplaceAll(strings.ReplaceAll(e2eSpec, "%BIN%", bin), "max_trials: 4", "max_trials: 0")
	if err := os.WriteFile(bad, []byte(strings.ReplaceAll(spec, "name: cli-e2e", "name: cli-bad")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = cliRun(t, with("submit", "-f", bad)...)
	if code != ExitUsage || !strings.Contains(errOut, "budget.max_trials") || !strings.Contains(errOut, bad) {
		t.Errorf("submit of an invalid spec: exit %d, want %d naming budget.max_trials and %s", code, ExitUsage, bad)
	}
	if _, _, code = cliRun(t, with("status", "cli-bad")...); code != ExitNotFound {
		t.Errorf("the invalid spec started a campaign (status exit %d)", code)
	}
}
