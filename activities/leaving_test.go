package activities

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// A batch scheduler taking the host back signals every process of the
// pilot job, the trainer as well as the agent. A trainer that then exits,
// cleanly after a checkpoint or killed by the SIGTERM, was stopped: the
// trial must resume elsewhere, neither completed nor failed.
func TestRunTrialExitWhileTheHostIsGivenBackIsAStop(t *testing.T) {
	for name, script := range map[string]string{
		"checkpoints and exits 0": `trap 'echo "{\"samples\": 10, \"checkpoint\": \"$GLEANER_CHECKPOINT_DIR/ck\"}" >> "$GLEANER_REPORT_FILE"; exit 0' TERM`,
		"dies of the SIGTERM":     ``,
	} {
		t.Run(name, func(t *testing.T) {
			env, a := runTrialEnv(t, nil)
			leaving := make(chan struct{})
			a.Leaving = leaving
			in := runInput(`echo x > "$GLEANER_CHECKPOINT_DIR/ck"; ` + script + `
echo $$ > "$GLEANER_CHECKPOINT_DIR/pid"
while :; do sleep 0.05; done`)
			pidFile := filepath.Join(a.DataDir, "c", "t1", "checkpoints", "pid")
			go func() {
				var pid int
				require.Eventually(t, func() bool {
					b, err := os.ReadFile(pidFile)
					if err != nil || !strings.HasSuffix(string(b), "\n") {
						return false
					}
					pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
					return err == nil
				}, 10*time.Second, 10*time.Millisecond)
				close(leaving) // the agent's SIGTERM
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}()
			v, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
			require.NoError(t, err)
			var res workflows.RunTrialResult
			require.NoError(t, v.Get(&res))
			require.Equal(t, workflows.RunStopped, res.Outcome)
		})
	}
}
