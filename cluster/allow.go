package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNotAllowed is what a launcher's TrainerPolicy refused: a command
// not on the allow-list (ErrCommandNotAllowed) or a spec that sets a
// denied environment variable (ErrEnvDenied). A launch it refused never
// started anything, and would be refused again: it is the trial's error,
// not the host's.
var ErrNotAllowed = errors.New("not allowed on this host")

// ErrCommandNotAllowed: the trainer's argv[0] matches none of the
// launcher's CommandPolicy patterns. It wraps ErrNotAllowed.
var ErrCommandNotAllowed = fmt.Errorf("trainer command %w", ErrNotAllowed)

// AllowCommandFlag names the setting an operator changes to allow a
// command, for messages: `gleaner worker` and `gleaner agent` take it.
const AllowCommandFlag = "--allow-command"

// CommandPolicy says which trainer commands a launcher starts. The zero
// value allows every command (what a launcher without a policy does);
// NewCommandPolicy makes one that allows only the commands its patterns
// match, none for an empty list.
//
// A command is matched by its path, resolved as the launcher executes
// it: argv[0] without a slash is looked up in the launcher's PATH (the
// worker's, not the spec's env: that is the PATH exec uses), a relative
// argv[0] with a slash is taken relative to the run's working directory
// (spec.WorkDir, else RunDir), and the result is made absolute and
// cleaned ("..", "." and repeated slashes removed). The launcher then
// executes that path, so what runs is what was matched.
//
// A pattern is an absolute path with filepath.Match's wildcards (*, ?,
// [...]), none of which matches a slash: /usr/bin/python3,
// /opt/trainers/*/train. A pattern ending in /** matches every path below
// the directories its head matches, at any depth: /opt/trainers/**
// allows /opt/trainers/a and /opt/trainers/x/y/z; /** allows everything.
// ** anywhere else is an error.
//
// Symbolic links are not followed: the path matched is the one named,
// wherever a link along it points. So a link inside an allowed directory
// is allowed: allow only directories that no campaign author can write
// to. An interpreter (python3, bash, env) runs whatever its arguments
// say: allowing it allows any program it can run.
type CommandPolicy struct {
	patterns []string // absolute, cleaned; nil with set: nothing
	set      bool     // false: the zero value, any command
}

// NewCommandPolicy returns the policy allowing the commands patterns
// match (see CommandPolicy), or an error naming the first bad pattern.
func NewCommandPolicy(patterns []string) (CommandPolicy, error) {
	p := CommandPolicy{set: true}
	for _, pat := range patterns {
		clean, err := cleanPattern(pat)
		if err != nil {
			return CommandPolicy{}, err
		}
		p.patterns = append(p.patterns, clean)
	}
	return p, nil
}

func cleanPattern(pat string) (string, error) {
	bad := func(why string) (string, error) { return "", fmt.Errorf("command pattern %q: %s", pat, why) }
	if pat == "" {
		return bad("empty")
	}
	if !filepath.IsAbs(pat) {
		return bad("not an absolute path (trainer commands are matched by their absolute path, e.g. /opt/trainers/**)")
	}
	if strings.HasSuffix(pat, "/") {
		return bad("ends in a slash: write /dir/** to allow every command below a directory")
	}
	head, tree := strings.CutSuffix(pat, "/**")
	if strings.Contains(head, "**") {
		return bad("** is only allowed as the last element (/dir/**)")
	}
	head = filepath.Clean(head)
	if head == "" || head == "." {
		head = "/"
	}
	if _, err := filepath.Match(head, ""); err != nil {
		return bad(err.Error())
	}
	if tree {
		if head == "/" {
			return "/**", nil
		}
		return head + "/**", nil
	}
	return head, nil
}

// AllowsAny reports whether the policy allows every command (the zero
// value).
func (p CommandPolicy) AllowsAny() bool { return !p.set }

// Patterns are the policy's patterns, cleaned; nil for the zero value.
func (p CommandPolicy) Patterns() []string { return append([]string(nil), p.patterns...) }

// Allows reports whether the absolute, cleaned path matches a pattern.
func (p CommandPolicy) Allows(path string) bool {
	if !p.set {
		return true
	}
	for _, pat := range p.patterns {
		head, tree := strings.CutSuffix(pat, "/**")
		if !tree {
			if ok, _ := filepath.Match(pat, path); ok {
				return true
			}
			continue
		}
		if head == "" {
			head = "/"
		}
		for d := filepath.Dir(path); ; d = filepath.Dir(d) {
			if ok, _ := filepath.Match(head, d); ok {
				return true
			}
			if d == "/" || d == "." {
				break
			}
		}
	}
	return false
}

// ResolveCommand is the absolute, cleaned path the launcher executes for
// argv0 in workDir (absolute): see CommandPolicy. An argv0 without a
// slash that is not on PATH is an *exec.Error wrapping exec.ErrNotFound.
func ResolveCommand(argv0, workDir string) (string, error) {
	if !strings.ContainsRune(argv0, os.PathSeparator) {
		found, err := exec.LookPath(argv0)
		if err != nil {
			return "", err
		}
		return filepath.Abs(found)
	}
	if filepath.IsAbs(argv0) {
		return filepath.Clean(argv0), nil
	}
	return filepath.Join(workDir, argv0), nil
}

// Check resolves argv0 in workDir (ResolveCommand) and returns the path
// to execute, or a *CommandNotAllowedError when no pattern matches it.
func (p CommandPolicy) Check(argv0, workDir string) (string, error) {
	path, err := ResolveCommand(argv0, workDir)
	if err != nil {
		return "", err
	}
	if !p.Allows(path) {
		return "", &CommandNotAllowedError{Command: argv0, Path: path}
	}
	return path, nil
}

// CommandNotAllowedError is a trainer command the policy refused; it is
// ErrCommandNotAllowed (and ErrNotAllowed) to errors.Is. Its message
// names the flag that allows it.
type CommandNotAllowedError struct {
	Command string // argv[0] as the spec gives it
	Path    string // what it resolves to
}

func (e *CommandNotAllowedError) Error() string {
	name := fmt.Sprintf("%q", e.Path)
	if e.Command != e.Path {
		name = fmt.Sprintf("%q (%s)", e.Command, e.Path)
	}
	return fmt.Sprintf("trainer %s is not allowed on this host: add it with %s (docs/security.md)", name, AllowCommandFlag)
}

// Is makes the error ErrCommandNotAllowed and ErrNotAllowed.
func (e *CommandNotAllowedError) Is(target error) bool {
	return target == ErrCommandNotAllowed || target == ErrNotAllowed
}

// TrainerPolicy is what a launcher lets a trainer run with: the commands
// it may start and the environment it inherits. The zero value allows any
// command and passes the default environment (EnvPolicy).
type TrainerPolicy struct {
	Commands CommandPolicy
	Env      EnvPolicy
}

// ReadCommandPatterns reads an allow-list file: one pattern per line,
// blank lines and lines starting with # ignored, white space around a
// pattern trimmed. The patterns are checked as NewCommandPolicy does;
// errors name the file and the line.
func ReadCommandPatterns(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, err := cleanPattern(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
		}
		out = append(out, line)
	}
	return out, nil
}
