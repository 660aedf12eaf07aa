package worker_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultConfigIsValid(t *testing.T) {
	c := worker.DefaultConfig()
	c.DataDir = t.TempDir()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	if c.TaskQueue != workflows.TaskQueue {
		t.Errorf("default task queue %q, want %q", c.TaskQueue, workflows.TaskQueue)
	}
	if c.UsesTLS() {
		t.Error("DefaultConfig uses TLS, want plaintext to a local dev server")
	}
}

func TestLoadEnv(t *testing.T) {
	c := worker.DefaultConfig()
	err := c.LoadEnv(env(map[string]string{
		client.EnvAddress:         "temporal.example.org:7233",
		client.EnvNamespace:       "science",
		client.EnvTaskQueue:       "gleaner-gpu",
		client.EnvAPIKey:          "secret-key",
		client.EnvTLSCA:           "/ca.pem",
		client.EnvTLSCert:         "/c.pem",
		client.EnvTLSKey:          "/k.pem",
		client.EnvTLSServerName:   "temporal.internal",
		worker.EnvDataDir:         "/scratch/gleaner",
		worker.EnvNodeSource:      "replay:trace.csv,slots=8,factor=60,offset=1h",
		worker.EnvThroughputModel: "/models/nas.json",
	}))
	if err != nil {
		t.Fatalf("LoadEnv: %v", err)
	}
	want := worker.Config{
		Connection: client.Connection{
			HostPort: "temporal.example.org:7233", Namespace: "science", TaskQueue: "gleaner-gpu",
			APIKey:         "secret-key",
			TLS:            client.TLSConfig{CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/k.pem", ServerName: "temporal.internal"},
			ConnectTimeout: client.DefaultConnectTimeout,
		},
		DataDir: "/scratch/gleaner",
		Nodes: worker.NodeSourceConfig{Kind: worker.NodeSourceReplay, Replay: worker.ReplayNodes{
			File: "trace.csv", Slots: 8, Factor: 60, Offset: time.Hour}},
		StopTimeout:     worker.DefaultStopTimeout,
		ThroughputModel: "/models/nas.json",
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("LoadEnv:\n got %+v\nwant %+v", c, want)
	}
	if !c.UsesTLS() {
		t.Error("UsesTLS() = false with an API key and TLS files")
	}
	if s := c.String(); strings.Contains(s, "secret-key") {
		t.Errorf("String() leaks the API key: %s", s)
	}
}

func TestLoadEnvKeepsDefaultsWhenUnset(t *testing.T) {
	c := worker.DefaultConfig()
	if err := c.LoadEnv(env(nil)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, worker.DefaultConfig()) {
		t.Errorf("LoadEnv with an empty environment changed the config: %+v", c)
	}
}

func TestLoadEnvErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{client.EnvTLS: "yes please"}, []string{"--tls", client.EnvTLS, "boolean"}},
		{map[string]string{worker.EnvNodeSource: "static:zero"}, []string{"--nodes", worker.EnvNodeSource, "node count"}},
	} {
		c := worker.DefaultConfig()
		err := c.LoadEnv(env(tc.env))
		checkFieldError(t, err, tc.want...)
	}
}

// The connection's own checks are client.Connection's (tested there); a
// worker config runs them, then its own.
func TestValidateNamesTheField(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		modify func(*worker.Config)
		want   []string
	}{
		{"empty address", func(c *worker.Config) { c.HostPort = "" }, []string{"--address", client.EnvAddress, "must be set"}},
		{"task queue", func(c *worker.Config) { c.TaskQueue = "" }, []string{"--task-queue", client.EnvTaskQueue}},
		{"data dir empty", func(c *worker.Config) { c.DataDir = "" }, []string{"--data-dir", worker.EnvDataDir}},
		{"data dir is a file", func(c *worker.Config) { c.DataDir = file }, []string{"--data-dir", "not a directory"}},
		{"no node source", func(c *worker.Config) { c.Nodes = worker.NodeSourceConfig{} }, []string{"--nodes", "must be set"}},
		{"replay missing trace", func(c *worker.Config) {
			c.Nodes = worker.NodeSourceConfig{Kind: worker.NodeSourceReplay, Replay: worker.ReplayNodes{File: filepath.Join(dir, "t.csv"), Slots: 2, Factor: 1}}
		}, []string{"--nodes", "trace file", "no such file"}},
		{"negative stop timeout", func(c *worker.Config) { c.StopTimeout = -time.Second }, []string{"--stop-timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := worker.DefaultConfig()
			c.DataDir = dir
			tc.modify(&c)
			checkFieldError(t, c.Validate(), tc.want...)
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := worker.Config{}
	err := c.Validate()
	for _, field := range []string{"--address", "--namespace", "--task-queue", "--data-dir", "--nodes"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate of an empty Config: %v; want it to name %s", err, field)
		}
	}
}

func TestValidateAcceptsExistingTraceAndTLSFiles(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(trace, []byte("t,node\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := worker.DefaultConfig()
	c.DataDir = filepath.Join(dir, "not-yet-created")
	c.Nodes = worker.NodeSourceConfig{Kind: worker.NodeSourceReplay, Replay: worker.ReplayNodes{File: trace, Slots: 2, Factor: 10}}
	c.TLS = client.TLSConfig{CAFile: trace, CertFile: trace, KeyFile: trace}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

// checkFieldError checks that err is (or joins) a *client.FieldError and
// that its message contains every want.
func checkFieldError(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want an error containing %q", want)
	}
	var fe *client.FieldError
	if !errors.As(err, &fe) {
		t.Errorf("err = %v (%T), want a *client.FieldError", err, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err = %q, want it to contain %q", err, w)
		}
	}
}

// The shipped throughput model loads; a missing or bad file is an error
// naming the flag and its variable; no file is no model.
func TestLoadThroughputModel(t *testing.T) {
	m, err := worker.LoadThroughputModel("")
	if m != nil || err != nil {
		t.Fatalf("no path: %v, %v; want nil, nil", m, err)
	}
	m, err = worker.LoadThroughputModel(filepath.Join("..", "examples", "pytorch-nas", "throughput-model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := m.Curve(`{"cell":{"nodes":2,"edges":[["conv_3x3"]],"stacks":2,"cells":1,"channels":8}}`, 2); err != nil || !(c[0] > 0) {
		t.Errorf("the shipped model's curve: %v, %v", c, err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"features":["step"],"coef":[1]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(t.TempDir(), "missing.json"), bad} {
		_, err := worker.LoadThroughputModel(path)
		var fe *client.FieldError
		if !errors.As(err, &fe) || fe.Field != "throughput-model" || fe.Env != worker.EnvThroughputModel || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v; want a field error naming --throughput-model, %s and the file", path, err, worker.EnvThroughputModel)
		}
	}
}

// The pool settings come from the environment, reach the pools' input,
// and bad values are errors naming the flag and the variable.
func TestPoolSettings(t *testing.T) {
	c := worker.DefaultConfig()
	c.DataDir = t.TempDir()
	err := c.LoadEnv(env(map[string]string{
		worker.EnvPoolPoll: "2s", worker.EnvAllocatePeriod: "1m", worker.EnvAllocateDebounce: "300ms",
		worker.EnvLookahead: "10m", worker.EnvFormulation: "greedy",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := worker.PoolSettings{Poll: 2 * time.Second, AllocatePeriod: time.Minute, Debounce: 300 * time.Millisecond, Lookahead: 10 * time.Minute, Formulation: "greedy"}
	if c.Pool != want {
		t.Fatalf("Pool %+v, want %+v", c.Pool, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	in := c.Pool.Input()
	if in.PollInterval != 2*time.Second || in.AllocatePeriod != time.Minute || in.Debounce != 300*time.Millisecond || in.Lookahead != 10*time.Minute || in.Formulation != "greedy" {
		t.Errorf("Input() = %+v", in)
	}

	bad := worker.DefaultConfig()
	err = bad.LoadEnv(env(map[string]string{worker.EnvLookahead: "soon"}))
	var fe *client.FieldError
	if !errors.As(err, &fe) || fe.Field != "lookahead" || fe.Env != worker.EnvLookahead {
		t.Errorf("lookahead soon: %v; want a field error naming --lookahead and %s", err, worker.EnvLookahead)
	}
	c.Pool.Formulation, c.Pool.Debounce = "optimal", -time.Second
	err = c.Validate()
	for _, want := range []string{`--formulation (` + worker.EnvFormulation + `): "optimal" is not one of compact, paper, greedy, equal`, "allocate-debounce", worker.EnvAllocateDebounce} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v; want it to name %s", err, want)
		}
	}
}

// A site's profiled curves and GPU-ratio table load into the worker's
// JPA; a missing or malformed file is an error naming the flag and the
// variable.
func TestLoadPriorCurvesAndGPURatios(t *testing.T) {
	dir := t.TempDir()
	csv := "nodes,gpus_per_node,local_bsz,step_time_s,samples_per_s\n1,4,32,0.05,2000\n2,4,32,0.055,3600\n4,4,32,0.06,6400\n"
	if err := os.WriteFile(filepath.Join(dir, "resnet__site.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	lib, err := worker.LoadPriorCurves(dir)
	if err != nil || len(lib) != 1 || len(lib[0].Points) != 3 {
		t.Fatalf("LoadPriorCurves: %+v, %v; want one curve of 3 points", lib, err)
	}
	gavel := filepath.Join(dir, "gavel.csv")
	if err := os.WriteFile(gavel, []byte("job_type,scale_factor,k80,v100\nA,1,1.0,4.0\nB,1,2.0,4.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := worker.LoadGPURatios(gavel)
	if err != nil {
		t.Fatal(err)
	}
	if r, _, ok := sp.Ratio("", "k80", "v100"); !ok || r < 2 || r > 4 {
		t.Errorf("v100/k80 ratio %v, %v; want the models' median, between 2 and 4", r, ok)
	}
	for _, tc := range []struct {
		load      func(string) error
		path      string
		field, ev string
	}{
		{func(p string) error { _, err := worker.LoadPriorCurves(p); return err }, filepath.Join(dir, "none"), "prior-curves", worker.EnvPriorCurves},
		{func(p string) error { _, err := worker.LoadGPURatios(p); return err }, filepath.Join(dir, "none.csv"), "gpu-ratios", worker.EnvGPURatios},
		{func(p string) error { _, err := worker.LoadGPURatios(p); return err }, filepath.Join(dir, "resnet__site.csv"), "gpu-ratios", worker.EnvGPURatios},
	} {
		err := tc.load(tc.path)
		var fe *client.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Env != tc.ev {
			t.Errorf("%s: %v; want a field error naming --%s and %s", tc.path, err, tc.field, tc.ev)
		}
	}
}

func TestTrainerSettingsFromTheEnvironment(t *testing.T) {
	c := worker.DefaultConfig()
	err := c.LoadEnv(env(map[string]string{
		worker.EnvAllowCommands:    "/opt/trainers/**:/usr/bin/python3",
		worker.EnvAllowCommandFile: "/etc/gleaner/allow",
		worker.EnvTrainerEnvPass:   "HF_*, WANDB_PROJECT",
		worker.EnvTrainerEnvDeny:   "HF_TOKEN",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := worker.TrainerSettings{
		AllowCommands: []string{"/opt/trainers/**", "/usr/bin/python3"}, AllowCommandFile: "/etc/gleaner/allow",
		EnvPass: []string{"HF_*", "WANDB_PROJECT"}, EnvDeny: []string{"HF_TOKEN"},
	}
	if !reflect.DeepEqual(c.Trainers, want) {
		t.Errorf("LoadEnv: trainers %+v, want %+v", c.Trainers, want)
	}
	if c.Trainers.Unrestricted() || !worker.DefaultConfig().Trainers.Unrestricted() {
		t.Error("Unrestricted: want true only without any allow setting")
	}
	checkFieldError(t, c.LoadEnv(env(map[string]string{worker.EnvAllowAnyCommand: "maybe"})), "--allow-any-command", worker.EnvAllowAnyCommand)
}

func TestTrainerSettingsPolicy(t *testing.T) {
	file := filepath.Join(t.TempDir(), "allow")
	if err := os.WriteFile(file, []byte("# site trainers\n/opt/trainers/**\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := worker.TrainerSettings{AllowCommands: []string{"/usr/bin/python3"}, AllowCommandFile: file, EnvPass: []string{"HF_*"}}
	p, err := s.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Commands.Patterns(), " "); got != "/usr/bin/python3 /opt/trainers/**" {
		t.Errorf("patterns %q, want the flag's then the file's", got)
	}
	if !p.Commands.Allows("/opt/trainers/mnist") || p.Commands.Allows("/usr/bin/curl") {
		t.Error("policy allows the wrong commands")
	}
	if !p.Env.Passes("HF_HOME") {
		t.Error("--trainer-env-pass HF_* does not pass HF_HOME")
	}
	for _, s := range []worker.TrainerSettings{{}, {AllowAnyCommand: true}} {
		p, err := s.Policy()
		if err != nil || !p.Commands.AllowsAny() {
			t.Errorf("%+v: policy %+v, %v; want any command", s, p, err)
		}
	}
	// A file of comments only restricts to nothing: it was given to restrict.
	empty := filepath.Join(t.TempDir(), "empty")
	_ = os.WriteFile(empty, []byte("# nothing yet\n"), 0o644)
	if p, err := (worker.TrainerSettings{AllowCommandFile: empty}).Policy(); err != nil || p.Commands.AllowsAny() || p.Commands.Allows("/bin/true") {
		t.Errorf("an empty allow file: %+v, %v; want nothing allowed", p, err)
	}
	want := []string{"--allow-command", "/usr/bin/python3", "--allow-command-file", file, "--trainer-env-pass", "HF_*"}
	if got := s.Args(); !reflect.DeepEqual(got, want) {
		t.Errorf("Args() = %q, want %q", got, want)
	}
}

func TestTrainerSettingsErrorsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		s    worker.TrainerSettings
		want []string
	}{
		"relative pattern": {worker.TrainerSettings{AllowCommands: []string{"train.sh"}}, []string{"--allow-command", worker.EnvAllowCommands, "absolute"}},
		"missing file":     {worker.TrainerSettings{AllowCommandFile: filepath.Join(dir, "none")}, []string{"--allow-command-file", "no such file"}},
		"any and a list":   {worker.TrainerSettings{AllowAnyCommand: true, AllowCommands: []string{"/x"}}, []string{"--allow-any-command", "contradicts"}},
		"bad env pattern":  {worker.TrainerSettings{EnvDeny: []string{"A=B"}}, []string{"--trainer-env-deny", worker.EnvTrainerEnvDeny}},
	} {
		t.Run(name, func(t *testing.T) {
			c := worker.DefaultConfig()
			c.DataDir = dir
			c.Trainers = tc.s
			checkFieldError(t, c.Validate(), tc.want...)
		})
	}
}

// The variables that hold a worker's secrets are never a trainer's, even
// when an operator passes everything.
func TestTrainersNeverSeeTheConnectionSecrets(t *testing.T) {
	p, err := worker.TrainerSettings{EnvPass: []string{"*"}}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{client.EnvAPIKey, client.EnvTLSCert, client.EnvTLSKey, client.EnvTLSCA, client.EnvCodecKey, client.EnvCodecKeyFile} {
		if p.Env.Passes(name) || !p.Env.Denied(name) {
			t.Errorf("%s reaches trainers, want it denied", name)
		}
	}
}
