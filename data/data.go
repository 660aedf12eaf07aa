// Package data carries Gleaner's reference data inside every binary: the
// idle-node traces, the BFTrainer workloads, the measured scaling curves and
// the Gavel GPU throughputs of this folder (README.md says what each file is,
// where it came from and under which terms it is redistributed).
//
// Names that start with Prefix ("embedded:traces/theta-2022.swf") address
// the built-in copy; any other name is a path on disk. Open and Dir accept
// both, so tests run from a plain clone and a command-line default works
// wherever the binary is installed, while users can still pass their own
// files.
//
// The package reads files and nothing else: it imports no other Gleaner
// package, so any package (tests included) may import it.
package data

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Prefix marks a name in the built-in reference data: "embedded:traces/theta-2022.swf".
const Prefix = "embedded:"

// Paths of the reference data inside FS; prepend Prefix to pass them to Open
// or Dir, or to a command-line flag.
const (
	// SummitIdle is the idle-node event trace of OLCF Summit, 10–14 Feb 2021
	// (unix_time,event,nodes), as replayed by BFTrainer.
	SummitIdle = "traces/summit-idle-2021-02-10_14.csv"
	// SummitIdle15Days is the whole of the same table, 10–24 Feb 2021: the
	// 15 days of issue 32, of which SummitIdle is the first five.
	SummitIdle15Days = "traces/summit-idle-2021-02-10_24.csv"
	// Theta2022 is the 2022 job log of ALCF Theta in the Standard Workload
	// Format.
	Theta2022 = "traces/theta-2022.swf"
	// HPO10 is BFTrainer's HPO scenario with 10 ShuffleNet trainings.
	HPO10 = "workloads/jobs-shufflenet-hpo-10.csv"
	// HPO1000 is BFTrainer's HPO scenario with 1,000 ShuffleNet trainings.
	HPO1000 = "workloads/jobs-shufflenet-hpo-1000.csv"
	// ImageNetMixed is BFTrainer's mixed workload: 1,001 ImageNet trainings
	// of seven networks, each job's name carrying its network
	// (J00003-DenseNet).
	ImageNetMixed = "workloads/jobs-imagenet-mixed-1001.csv"
	// Scaling is the folder of measured throughput-versus-nodes curves,
	// one <app>__<cluster>.csv per application and cluster.
	Scaling = "scaling"
	// Gavel is Gavel's table of isolated throughputs on K80, P100 and V100.
	Gavel = "gpus/gavel-isolated-throughputs.csv"
)

//go:embed traces workloads scaling gpus
var files embed.FS

// FS is the embedded tree: traces/, workloads/, scaling/ and gpus/.
func FS() fs.FS { return files }

// IsEmbedded reports whether name addresses the built-in data (has Prefix).
func IsEmbedded(name string) bool { return strings.HasPrefix(name, Prefix) }

// Open opens a data file. A name with Prefix opens the embedded file at the
// rest of the name; any other name is a file on disk. Errors name the file.
func Open(name string) (io.ReadCloser, error) {
	if !IsEmbedded(name) {
		f, err := os.Open(name)
		if err != nil {
			return nil, err // *fs.PathError already names the file
		}
		return f, nil
	}
	rel, err := embeddedPath(name)
	if err != nil {
		return nil, err
	}
	f, err := files.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("%s: not in the built-in reference data: %w", name, fs.ErrNotExist)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: is a folder of the built-in reference data, not a file", name)
	}
	return f, nil
}

// Dir opens a data folder as an fs.FS. A name with Prefix is the embedded
// folder at the rest of the name ("embedded:scaling"); any other name is a
// directory on disk. Errors name the folder.
func Dir(name string) (fs.FS, error) {
	if !IsEmbedded(name) {
		st, err := os.Stat(name)
		if err != nil {
			return nil, err // *fs.PathError already names the folder
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s: not a directory", name)
		}
		return os.DirFS(name), nil
	}
	rel, err := embeddedPath(name)
	if err != nil {
		return nil, err
	}
	st, err := fs.Stat(files, rel)
	if err != nil {
		return nil, fmt.Errorf("%s: not in the built-in reference data: %w", name, fs.ErrNotExist)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: is a file of the built-in reference data, not a folder", name)
	}
	return fs.Sub(files, rel)
}

// embeddedPath strips Prefix and checks that the rest is a valid fs.FS path
// ("." for the whole tree).
func embeddedPath(name string) (string, error) {
	rel := strings.TrimPrefix(name, Prefix)
	if rel == "" {
		rel = "."
	}
	if !fs.ValidPath(rel) {
		return "", fmt.Errorf("%s: %q is not a valid path in the built-in reference data (want e.g. %s%s)", name, rel, Prefix, Theta2022)
	}
	return rel, nil
}
