package cluster

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// ErrEnvDenied: a trial's spec sets an environment variable the
// launcher's EnvPolicy denies. It wraps ErrNotAllowed.
var ErrEnvDenied = fmt.Errorf("environment variable %w", ErrNotAllowed)

// DefaultEnvPass are the variables of the launcher's own environment a
// trainer inherits (EnvPolicy), as path.Match patterns: the shell's
// basics, locale and time zone, temporary and cache directories,
// environment modules (Lmod, Tcl modules), the GPU and collective
// communication stacks (CUDA, NVIDIA, ROCm, NCCL, Gloo, UCX, libfabric,
// MPI), the dynamic linker's and Python's search paths, virtualenv and
// conda, thread counts of the numeric libraries, the batch scheduler's
// job (SLURM_*), proxies and CA bundles. Everything else, the worker's
// secrets among it, stays with the worker. Proxies may embed credentials
// (http://user:password@proxy): deny them with --trainer-env-deny where
// they do.
var DefaultEnvPass = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "HOSTNAME",
	"LANG", "LANGUAGE", "LC_*", "TZ",
	"TMPDIR", "TMP", "TEMP", "XDG_*",
	"MODULEPATH", "MODULESHOME", "LOADEDMODULES", "_LMFILES_", "MODULEPATH_*", "MODULES_*",
	"LMOD_*", "__LMOD_*",
	"CUDA_*", "NVIDIA_*", "CUDNN_*", "NCCL_*", "GLOO_*", "UCX_*", "FI_*",
	"ROCM_*", "ROCR_*", "HIP_*", "HSA_*",
	"OMPI_*", "PMIX_*", "I_MPI_*", "MPICH_*",
	"LD_LIBRARY_PATH", "LIBRARY_PATH",
	"PYTHONPATH", "PYTHONHOME", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV", "CONDA_*",
	"GLEANER_PYTHON",
	"OMP_*", "MKL_*", "OPENBLAS_*", "KMP_*",
	"SLURM_*",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
}

// DefaultEnvDeny are the variables a trainer never gets, whoever sets
// them (EnvPolicy): Gleaner's own secrets, those of its connection to
// Temporal (client.EnvAPIKey, client.EnvTLSCert, …) and of its payload
// codec (GLEANER_CODEC_KEY, …), and the temporal CLI's.
var DefaultEnvDeny = []string{
	"TEMPORAL_API_KEY", "TEMPORAL_TLS_*", "TEMPORAL_CODEC_*",
	"GLEANER_CODEC_*",
}

// EnvPolicy decides what a trainer's environment holds besides the
// protocol's variables. Of the launcher's own environment it passes the
// variables DefaultEnvPass or Pass match, except those DefaultEnvDeny or
// Deny match: deny wins. The spec's env is passed whole, except that a
// spec setting a denied variable is refused (ErrEnvDenied). The
// protocol's variables (GLEANER_*, the rendezvous', GLEANER_RUN_TOKEN,
// CUDA_VISIBLE_DEVICES) come last and win over both. The zero value is
// the defaults.
type EnvPolicy struct {
	// Pass and Deny are path.Match patterns on variable names, added to
	// the defaults; Pass "*" passes everything not denied.
	Pass, Deny []string
}

// Validate names the first malformed pattern.
func (p EnvPolicy) Validate() error {
	var errs []error
	for _, list := range []struct {
		name     string
		patterns []string
	}{{"pass", p.Pass}, {"deny", p.Deny}} {
		for _, pat := range list.patterns {
			if pat == "" || strings.ContainsAny(pat, "=\x00") {
				errs = append(errs, fmt.Errorf("trainer env %s %q: want a variable name or a pattern like CUDA_*", list.name, pat))
				continue
			}
			if _, err := path.Match(pat, ""); err != nil {
				errs = append(errs, fmt.Errorf("trainer env %s %q: %w", list.name, pat, err))
			}
		}
	}
	return errors.Join(errs...)
}

func matchAny(patterns []string, name string) bool {
	return slices.ContainsFunc(patterns, func(pat string) bool {
		ok, _ := path.Match(pat, name)
		return ok
	})
}

// Denied reports whether name is a variable no trainer gets.
func (p EnvPolicy) Denied(name string) bool {
	return matchAny(DefaultEnvDeny, name) || matchAny(p.Deny, name)
}

// Passes reports whether a trainer inherits the launcher's variable name.
func (p EnvPolicy) Passes(name string) bool {
	return !p.Denied(name) && (matchAny(DefaultEnvPass, name) || matchAny(p.Pass, name))
}

// Inherited is environ ("NAME=value" entries, os.Environ's) reduced to
// the variables a trainer inherits, in order.
func (p EnvPolicy) Inherited(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if p.Passes(name) {
			out = append(out, kv)
		}
	}
	return out
}

// CheckSpecEnv refuses a spec's env that sets a denied variable, naming
// them all (sorted).
func (p EnvPolicy) CheckSpecEnv(env map[string]string) error {
	var denied []string
	for k := range env {
		if p.Denied(k) {
			denied = append(denied, k)
		}
	}
	if len(denied) == 0 {
		return nil
	}
	slices.Sort(denied)
	return fmt.Errorf("env: %s: %w: the host keeps it from trainers (--trainer-env-deny, docs/security.md)",
		strings.Join(denied, ", "), ErrEnvDenied)
}
