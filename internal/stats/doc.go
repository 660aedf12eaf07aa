// Package stats holds the sample statistics that Gleaner's packages share:
// the interpolated quantile and the median (jpa's priors, nas's fits, the
// median stopping rule, the search benchmarks) and the nearest-rank
// quantile and summary that reports print (sim, the benchmarks, the Slurm
// demo).
//
// It is pure and a leaf: it imports only the standard library, so that
// the pure core (hpo, jpa, nas) and the adapters can all use it. Its
// functions never modify their input.
package stats
