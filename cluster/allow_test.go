package cluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func mustPolicy(t *testing.T, patterns ...string) CommandPolicy {
	t.Helper()
	p, err := NewCommandPolicy(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommandPolicyPatterns(t *testing.T) {
	p := mustPolicy(t, "/usr/bin/python3", "/opt/trainers/**", "/srv/*/train", "/data/run-[0-9]")
	for path, want := range map[string]bool{
		"/usr/bin/python3":        true,
		"/usr/bin/python3.11":     false,
		"/usr/bin/python":         false,
		"/opt/trainers/a":         true,
		"/opt/trainers/x/y/z":     true,
		"/opt/trainers":           false, // the directory itself is no command below it
		"/opt/trainersx/a":        false,
		"/opt/other/trainers/a":   false,
		"/srv/mnist/train":        true,
		"/srv/mnist/sub/train":    false, // * never matches a slash
		"/srv/train":              false,
		"/data/run-7":             true,
		"/data/run-x":             false,
		"/usr/bin/curl":           false,
		"/opt/trainers/../../bin": false, // never reached: paths are cleaned first, see TestResolveCommand
	} {
		if got := p.Allows(filepath.Clean(path)); got != want {
			t.Errorf("Allows(%q) = %v, want %v", path, got, want)
		}
	}
	if !mustPolicy(t, "/**").Allows("/usr/bin/curl") {
		t.Error("/** does not allow /usr/bin/curl, want every path")
	}
	if mustPolicy(t).Allows("/bin/true") {
		t.Error("an empty allow-list allows /bin/true, want nothing")
	}
	var zero CommandPolicy
	if !zero.AllowsAny() || !zero.Allows("/usr/bin/curl") {
		t.Error("the zero CommandPolicy refuses a command, want any allowed")
	}
	if p.AllowsAny() {
		t.Error("a policy with patterns AllowsAny")
	}
}

func TestCommandPolicyRejectsBadPatterns(t *testing.T) {
	for pat, want := range map[string]string{
		"":                 "empty",
		"bin/train":        "absolute",
		"/opt/trainers/":   "/dir/**",
		"/opt/**/train":    "last element",
		"/opt/[a-":         "syntax",
		"python3":          "absolute",
		"/opt/trainers/**": "",
		"/usr/bin/python*": "",
	} {
		_, err := NewCommandPolicy([]string{pat})
		if want == "" {
			if err != nil {
				t.Errorf("pattern %q: %v, want it accepted", pat, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), pat) {
			t.Errorf("pattern %q: err = %v, want one naming it and saying %q", pat, err, want)
		}
	}
}

func TestResolveCommand(t *testing.T) {
	bin := t.TempDir()
	exe := filepath.Join(bin, "mytrainer")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	work := "/work/dir"
	for _, c := range []struct{ argv0, want string }{
		{"mytrainer", exe},                        // PATH lookup, the launcher's PATH
		{"/opt/t/../t/./train", "/opt/t/train"},   // cleaned
		{"bin/train", "/work/dir/bin/train"},      // relative to the work dir
		{"./train", "/work/dir/train"},            //
		{"../../usr/bin/curl", "/usr/bin/curl"},   // cleaned after joining: no escape by dots
		{"/opt/trainers/../../bin/sh", "/bin/sh"}, //
		{"sub//x", "/work/dir/sub/x"},             //
	} {
		got, err := ResolveCommand(c.argv0, work)
		if err != nil || got != c.want {
			t.Errorf("ResolveCommand(%q, %q) = %q, %v; want %q", c.argv0, work, got, err, c.want)
		}
	}
	_, err := ResolveCommand("no-such-trainer-anywhere", work)
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("unknown bare command: err = %v, want exec.ErrNotFound", err)
	}
	// Dots cannot climb out of an allowed tree.
	p := mustPolicy(t, "/opt/trainers/**")
	if _, err := p.Check("/opt/trainers/../../bin/sh", work); !errors.Is(err, ErrCommandNotAllowed) {
		t.Errorf("/opt/trainers/../../bin/sh: err = %v, want ErrCommandNotAllowed", err)
	}
}

// Symbolic links are not followed (see CommandPolicy): a link inside an
// allowed tree is allowed whatever it points to, a link outside to an
// allowed file is not.
func TestCommandPolicySymlinks(t *testing.T) {
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	other := filepath.Join(dir, "other")
	for _, d := range []string{allowed, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	real := filepath.Join(allowed, "train")
	if err := os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(allowed, "sh")
	outside := filepath.Join(other, "train")
	if err := os.Symlink("/bin/sh", inside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, outside); err != nil {
		t.Fatal(err)
	}
	p := mustPolicy(t, allowed+"/**")
	if _, err := p.Check(inside, "/"); err != nil {
		t.Errorf("link %s inside the allowed tree: %v, want allowed (links are not followed)", inside, err)
	}
	if _, err := p.Check(outside, "/"); !errors.Is(err, ErrCommandNotAllowed) {
		t.Errorf("link %s outside the tree to an allowed file: %v, want ErrCommandNotAllowed", outside, err)
	}
}

func TestCommandNotAllowedErrorNamesTheFlag(t *testing.T) {
	_, err := mustPolicy(t, "/opt/trainers/**").Check("/usr/bin/curl", "/")
	var ce *CommandNotAllowedError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCommandNotAllowed) || !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("err = %v (%T), want a *CommandNotAllowedError that is ErrCommandNotAllowed and ErrNotAllowed", err, err)
	}
	want := `trainer "/usr/bin/curl" is not allowed on this host: add it with --allow-command`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
	t.Setenv("PATH", "/usr/bin:/bin")
	if _, err := mustPolicy(t).Check("sh", "/"); err == nil || !strings.Contains(err.Error(), `trainer "sh" (/`) {
		t.Errorf("bare sh: err = %v, want it to name sh and the path it resolves to", err)
	}
}

func TestReadCommandPatterns(t *testing.T) {
	file := filepath.Join(t.TempDir(), "allow")
	text := "# trainers of the site\n/opt/trainers/**\n\n  /usr/bin/python3  \n# end\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCommandPatterns(file)
	if err != nil || strings.Join(got, " ") != "/opt/trainers/** /usr/bin/python3" {
		t.Errorf("ReadCommandPatterns = %q, %v; want the two patterns", got, err)
	}
	if err := os.WriteFile(file, []byte("/ok\nrelative/path\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCommandPatterns(file); err == nil || !strings.Contains(err.Error(), file+":2:") {
		t.Errorf("bad line: err = %v, want one naming %s:2", err, file)
	}
}

// A command the policy refuses never starts: nothing it would do
// happens, and the launch creates nothing (not even the run directory).
func TestLaunchRefusesADisallowedCommand(t *testing.T) {
	l := newLauncher(t, 1)
	if err := l.SetPolicy(TrainerPolicy{Commands: mustPolicy(t, "/opt/trainers/**")}); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	spec := shSpec(t, "touch "+marker)
	_, err := l.Launch(context.Background(), spec)
	if !errors.Is(err, ErrCommandNotAllowed) || !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("Launch: err = %v, want ErrCommandNotAllowed", err)
	}
	if !strings.Contains(err.Error(), `"/bin/sh" is not allowed`) || !strings.Contains(err.Error(), "--allow-command") {
		t.Errorf("err = %q, want it to name /bin/sh and --allow-command", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (%v): the refused command ran", marker, err)
	}
	if _, err := os.Stat(spec.RunDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run dir %s created (%v) for a refused launch", spec.RunDir, err)
	}
}

// An allowed command runs by the path the policy matched, with argv[0]
// as the spec gives it; a relative command is found in the work dir.
func TestLaunchRunsAnAllowedCommand(t *testing.T) {
	work := t.TempDir()
	script := filepath.Join(work, "bin", "train")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"argv0=$0\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := newLauncher(t, 1)
	if err := l.SetPolicy(TrainerPolicy{Commands: mustPolicy(t, work+"/bin/*")}); err != nil {
		t.Fatal(err)
	}
	spec := shSpec(t, "")
	spec.Command = []string{"bin/train"}
	spec.WorkDir = work
	p := launch(t, l, spec)
	if st := waitExit(t, p); !st.OK() {
		t.Fatalf("exit %+v, want OK", st)
	}
	if got := envOf(t, p.LogFile())["argv0"]; got != script {
		// sh sets $0 to the script's path as the kernel ran it.
		t.Errorf("$0 = %q, want %q", got, script)
	}
}
