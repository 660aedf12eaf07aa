package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkRescale measures the local launcher's share of a rescale: Stop
// of a trainer that checkpoints instantly on SIGTERM, then Launch of its
// successor on another node count, until the new process has been exec'd.
// The trainer's own start-up (imports, loading the checkpoint) is not
// included. Reports p50 and p99 besides the mean.
func BenchmarkRescale(b *testing.B) {
	host, err := NewLocalHost(context.Background(), LocalConfig{Slots: 2, GPUs: []GPU{}})
	if err != nil {
		b.Fatal(err)
	}
	l, err := NewLocalLauncher(host)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	spec := func(i int) LaunchSpec {
		nodes := []string{"local-0", "local-1"}[:1+i%2]
		return LaunchSpec{
			TrialID:       "bench",
			Command:       []string{"/bin/sh", "-c", `trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`},
			Params:        []byte(`{"lr":0.1}`),
			Nodes:         nodes,
			CheckpointDir: filepath.Join(dir, "ckpt"),
			RunDir:        filepath.Join(dir, fmt.Sprintf("run-%d", i)),
		}
	}
	ctx := context.Background()
	p, err := l.Launch(ctx, spec(0))
	if err != nil {
		b.Fatal(err)
	}
	// The shell installs its trap within microseconds of exec; a TERM
	// before that ends it by signal, which still counts as a stop here.
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		p.Stop(10 * time.Second)
		if p, err = l.Launch(ctx, spec(i+1)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	p.Stop(0)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
