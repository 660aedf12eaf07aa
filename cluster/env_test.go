package cluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/trial"
)

func TestEnvPolicyInherited(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C", "CUDA_HOME=/cuda", "SLURM_JOB_ID=7",
		"TEMPORAL_API_KEY=secret", "TEMPORAL_TLS_KEY=/k.pem", "GLEANER_CODEC_KEY=k", "GLEANER_CODEC_KEY_FILE=/f",
		"AWS_SECRET_ACCESS_KEY=s", "HF_TOKEN=t", "HF_HOME=/hf", "GLEANER_DATA_DIR=/data", "GLEANER_PYTHON=/py",
		"SITE_PASSWORD=p", "NCCL_IB_HCA=mlx5",
	}
	got := EnvPolicy{}.Inherited(environ)
	want := "PATH=/usr/bin HOME=/home/u LC_ALL=C CUDA_HOME=/cuda SLURM_JOB_ID=7 GLEANER_PYTHON=/py NCCL_IB_HCA=mlx5"
	if strings.Join(got, " ") != want {
		t.Errorf("default policy passes\n %s\nwant\n %s", strings.Join(got, " "), want)
	}

	// The operator's pass-list adds, the deny-list wins over both.
	p := EnvPolicy{Pass: []string{"HF_*", "SITE_*"}, Deny: []string{"HF_TOKEN", "SLURM_*"}}
	got = p.Inherited(environ)
	want = "PATH=/usr/bin HOME=/home/u LC_ALL=C CUDA_HOME=/cuda HF_HOME=/hf GLEANER_PYTHON=/py SITE_PASSWORD=p NCCL_IB_HCA=mlx5"
	if strings.Join(got, " ") != want {
		t.Errorf("policy %+v passes\n %s\nwant\n %s", p, strings.Join(got, " "), want)
	}

	// Pass "*" is the whole environment but the secrets.
	got = EnvPolicy{Pass: []string{"*"}}.Inherited(environ)
	for _, kv := range got {
		if strings.HasPrefix(kv, "TEMPORAL_") || strings.HasPrefix(kv, "GLEANER_CODEC_") {
			t.Errorf("pass * passes the secret %s", kv)
		}
	}
	if len(got) != len(environ)-4 {
		t.Errorf("pass * passes %d variables, want all %d but the 4 secrets", len(got), len(environ))
	}
}

func TestEnvPolicyValidate(t *testing.T) {
	if err := (EnvPolicy{Pass: []string{"HF_*"}, Deny: []string{"X"}}).Validate(); err != nil {
		t.Errorf("valid policy: %v", err)
	}
	for _, p := range []EnvPolicy{{Pass: []string{""}}, {Deny: []string{"A=B"}}, {Pass: []string{"[A-"}}} {
		if err := p.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", p)
		}
	}
	l := newLauncher(t, 1)
	if err := l.SetPolicy(TrainerPolicy{Env: EnvPolicy{Deny: []string{"[x"}}}); err == nil {
		t.Error("SetPolicy with a malformed deny pattern succeeded")
	}
}

// A real trainer never sees the worker's secrets, whatever the worker's
// environment holds, while PATH and the spec's own variables reach it and
// the protocol's variables win over the spec's.
func TestLaunchScrubsTheWorkersSecrets(t *testing.T) {
	t.Setenv("TEMPORAL_API_KEY", "api-key-never-seen")
	t.Setenv("TEMPORAL_TLS_KEY", "/secret/tls.key")
	t.Setenv("GLEANER_CODEC_KEY", "codec-key-never-seen")
	t.Setenv("SITE_DB_PASSWORD", "hunter2")
	t.Setenv("MY_SITE_SETTING", "passed-by-operator")
	l := newLauncher(t, 1)
	if err := l.SetPolicy(TrainerPolicy{Env: EnvPolicy{Pass: []string{"MY_SITE_*", "TEMPORAL_*"}}}); err != nil {
		t.Fatal(err)
	}
	spec := shSpec(t, "env")
	spec.Env = map[string]string{"SPEC_VAR": "from-spec", EnvRunToken: "smuggled", trial.EnvTrialID: "forged"}
	p := launch(t, l, spec)
	if st := waitExit(t, p); !st.OK() {
		t.Fatalf("exit %+v, want OK", st)
	}
	log, err := os.ReadFile(p.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"api-key-never-seen", "/secret/tls.key", "codec-key-never-seen", "hunter2"} {
		if strings.Contains(string(log), secret) {
			t.Errorf("the trainer saw %q:\n%s", secret, log)
		}
	}
	env := envOf(t, p.LogFile())
	for k, v := range map[string]string{"PATH": os.Getenv("PATH"), "SPEC_VAR": "from-spec", "MY_SITE_SETTING": "passed-by-operator", trial.EnvTrialID: "t-1"} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if env[EnvRunToken] == "smuggled" || env[EnvRunToken] == "" {
		t.Errorf("%s = %q, want the launcher's token, not the spec's", EnvRunToken, env[EnvRunToken])
	}
}

// A spec may not set a denied variable: the launch is refused before
// anything starts, naming the variable.
func TestLaunchRefusesASpecSettingADeniedVariable(t *testing.T) {
	l := newLauncher(t, 1)
	if err := l.SetPolicy(TrainerPolicy{Env: EnvPolicy{Deny: []string{"SITE_*"}}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"TEMPORAL_API_KEY", "SITE_TOKEN"} {
		spec := shSpec(t, "true")
		spec.Env = map[string]string{name: "x"}
		_, err := l.Launch(context.Background(), spec)
		if !errors.Is(err, ErrEnvDenied) || !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), name) {
			t.Errorf("spec env %s: err = %v, want ErrEnvDenied naming it", name, err)
		}
	}
}

// The socket interface goes to the collective libraries unless the
// launcher's environment, as the trainer inherits it, or the spec sets it.
func TestLaunchSocketIfnameAfterScrubbing(t *testing.T) {
	t.Setenv(EnvNCCLSocketIfname, "ib0")
	l := newLauncher(t, 1)
	spec := shSpec(t, "env")
	spec.SocketIfname = "eth7"
	p := launch(t, l, spec)
	waitExit(t, p)
	env := envOf(t, p.LogFile())
	if env[EnvNCCLSocketIfname] != "ib0" || env[EnvGlooSocketIfname] != "eth7" {
		t.Errorf("NCCL %q Gloo %q, want the site's ib0 and the launcher's eth7", env[EnvNCCLSocketIfname], env[EnvGlooSocketIfname])
	}
}
