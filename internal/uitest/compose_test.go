package uitest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// root is the repository root, from this package's directory.
var root = filepath.Join("..", "..")

// `docker-compose config -q` accepts docker-compose.yml (what `make
// compose-check` and CI run). No Docker engine is needed.
func TestComposeConfig(t *testing.T) {
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		if ci() {
			t.Fatal("CI=true but docker-compose is not installed (apt-get install docker-compose)")
		}
		t.Skip("skipping: docker-compose is not installed (apt-get install docker-compose)")
	}
	cmd := exec.Command(bin, "-f", "docker-compose.yml", "config", "-q")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker-compose config -q: %v\n%s", err, out)
	}
}

type composeFile struct {
	Services map[string]struct {
		Image      string   `yaml:"image"`
		Entrypoint []string `yaml:"entrypoint"`
		Command    []string `yaml:"command"`
		Build      any      `yaml:"build"`
	} `yaml:"services"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f
}

// The search attributes that the compose stack registers are exactly
// Gleaner's (workflows.SearchAttributes, names and types), so the two
// cannot drift apart.
func TestComposeSearchAttributes(t *testing.T) {
	f := readCompose(t)
	setup, ok := f.Services["temporal-setup"]
	if !ok {
		t.Fatal("docker-compose.yml has no temporal-setup service")
	}
	if !slices.Contains(setup.Entrypoint, "/gleaner-deploy/setup-temporal.sh") {
		t.Errorf("temporal-setup runs %q, want deploy/setup-temporal.sh", setup.Entrypoint)
	}
	var want []string
	for _, k := range workflows.SearchAttributes {
		want = append(want, k.GetName()+"="+workflows.SearchAttributeTypeName(k.GetValueType()))
	}
	got := slices.Clone(setup.Command)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("temporal-setup registers\n  %q\nbut workflows.SearchAttributes are\n  %q", got, want)
	}
}

// Every image is pinned to a version, the worker is built from the
// Dockerfile, and the Dockerfile builds with go.mod's Go.
func TestComposeAndDockerfilePins(t *testing.T) {
	f := readCompose(t)
	for name, s := range f.Services {
		if s.Build != nil {
			continue
		}
		_, tag, ok := strings.Cut(s.Image, ":")
		if !ok || tag == "" || tag == "latest" || !regexp.MustCompile(`\d+\.\d+`).MatchString(tag) {
			t.Errorf("service %s: image %q is not pinned to a version", name, s.Image)
		}
	}
	if w, ok := f.Services["gleaner-worker"]; !ok || w.Build == nil {
		t.Error("docker-compose.yml: gleaner-worker is not built from the Dockerfile")
	}

	goVersion := ""
	mod, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	for sc := bufio.NewScanner(mod); sc.Scan(); {
		if v, ok := strings.CutPrefix(sc.Text(), "go "); ok {
			goVersion = strings.TrimSpace(v)
		}
	}
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ARG GO_IMAGE=golang:(\S+)$`).FindSubmatch(df)
	if m == nil {
		t.Fatal("Dockerfile: no `ARG GO_IMAGE=golang:<version>` line")
	}
	if img := string(m[1]); !strings.HasPrefix(img, goVersion+"-") && img != goVersion {
		t.Errorf("Dockerfile builds with golang:%s but go.mod says go %s", img, goVersion)
	}
}
