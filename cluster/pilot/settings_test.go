package pilot

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultsFollowTheLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   Settings
		lim   Limits
		check func(t *testing.T, s Settings)
		note  string
	}{
		{name: "zero limits", check: func(t *testing.T, s Settings) {
			assert.Equal(t, DefaultMaxPending, s.MaxPending)
			assert.Equal(t, 1, s.MaxPilots)
			assert.Equal(t, DefaultTimeLimit, s.TimeLimit)
			assert.Equal(t, DefaultTimeMin, s.TimeMin)
			assert.Equal(t, MinLead, s.Lead)
			assert.Equal(t, 2*time.Second, s.Interval)
			assert.Equal(t, DefaultIdleRelease, s.IdleRelease)
			assert.Zero(t, s.Yield, "only claims already due")
			assert.Equal(t, time.Local, s.Location)
		}},
		{name: "from the partition", lim: Limits{Nodes: 6, Grace: time.Minute, Cycle: 45 * time.Second}, check: func(t *testing.T, s Settings) {
			assert.Equal(t, 6, s.MaxPilots)
			assert.Equal(t, time.Minute, s.Lead)
			assert.Equal(t, 30*time.Second, s.Interval, "at most 30 s")
			assert.Equal(t, 45*time.Second, s.Yield, "one plan's age")
		}},
		{name: "time limit capped", lim: Limits{MaxTime: 5 * time.Minute, MaxTimeSetting: "partition g's MaxTime"},
			set: Settings{Lead: time.Second}, check: func(t *testing.T, s Settings) {
				assert.Equal(t, 5*time.Minute, s.TimeLimit)
				assert.Equal(t, 5*time.Minute, s.TimeMin)
			}, note: "pilots' time limit 2h0m0s exceeds partition g's MaxTime 5m0s: using it"},
		{name: "given settings stay", lim: testLimits, set: Settings{MaxPending: 8, MaxPilots: 64, TimeLimit: time.Hour, TimeMin: 20 * time.Minute, Lead: 45 * time.Second, Interval: 5 * time.Second, Yield: -1},
			check: func(t *testing.T, s Settings) {
				assert.Equal(t, Settings{Pool: "p", MaxPending: 8, MaxPilots: 64, TimeLimit: time.Hour, TimeMin: 20 * time.Minute, Lead: 45 * time.Second,
					Interval: 5 * time.Second, IdleRelease: DefaultIdleRelease, Yield: -1, Location: time.Local}, Settings{
					Pool: s.Pool, MaxPending: s.MaxPending, MaxPilots: s.MaxPilots, TimeLimit: s.TimeLimit, TimeMin: s.TimeMin, Lead: s.Lead,
					Interval: s.Interval, IdleRelease: s.IdleRelease, Yield: s.Yield, Location: s.Location})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var notes []string
			tc.set.Pool = "p"
			s, err := tc.set.withDefaults(tc.lim, func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) })
			require.NoError(t, err)
			tc.check(t, s)
			if tc.note == "" {
				assert.Empty(t, notes)
			} else {
				assert.Equal(t, []string{tc.note}, notes)
			}
		})
	}
}

func TestSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		set  Settings
		want string
	}{
		{Settings{}, "pool: empty"},
		{Settings{Pool: "p", MaxPending: -1}, "max_pending"},
		{Settings{Pool: "p", GPUs: -1}, "gpus -1"},
		{Settings{Pool: "p", TimeLimit: time.Hour, TimeMin: 2 * time.Hour}, "time_min 2h0m0s exceeds time 1h0m0s"},
		{Settings{Pool: "p", TimeMin: 20 * time.Second}, "the time-limit signal's lead 30s must be shorter than time_min 20s"},
		{Settings{Pool: "p", Server: "localhost:7233"}, "server localhost:7233: a loopback address"},
		{Settings{Pool: "p", AgentEnv: []string{"TEMPORAL_API_KEY=k", "s3cret"}}, "agent environment, entry 1: want NAME=value"},
	} {
		_, err := New(tc.set, Limits{}, &fakeScheduler{}, &fakePool{}, nil)
		assert.ErrorContains(t, err, "fake: "+tc.want)
	}
}
