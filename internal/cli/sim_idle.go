package cli

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/sim"
)

// What `gleaner sim` tells the allocator of the holes: --idle-estimate
// and --tfwd (docs/sim.md).

// lookahead parses --tfwd: seconds (0: sim.DefaultLookahead) or a
// duration, fixed; or auto, derived from the idle estimates with the
// default as the fallback.
func (o *simOptions) lookahead() (seconds float64, derive bool, err error) {
	s := strings.TrimSpace(o.tfwd)
	if s == "auto" {
		return 0, true, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		d, derr := time.ParseDuration(s)
		if derr != nil {
			return 0, false, usageErrorf("--tfwd: %q is not auto, a number of seconds or a duration such as 5m", o.tfwd)
		}
		v = d.Seconds()
	}
	if !finiteNonNegative(v) {
		return 0, false, usageErrorf("--tfwd: %q must be a non-negative number of seconds", o.tfwd)
	}
	return v, false, nil
}

// idleEstimates parses --idle-estimate: none, true or noisy:SIGMA, the
// noise seeded by --seed.
func (o *simOptions) idleEstimates() (sim.IdleEstimate, error) {
	mode, arg, hasArg := strings.Cut(strings.TrimSpace(o.idleEstimate), ":")
	ie := sim.IdleEstimate{Mode: sim.IdleEstimateMode(mode)}
	switch ie.Mode {
	case sim.IdleEstimateNone, sim.IdleEstimateTrue:
		if hasArg {
			return ie, usageErrorf("--idle-estimate: %q: only noisy takes a sigma", o.idleEstimate)
		}
	case sim.IdleEstimateNoisy:
		sigma, err := strconv.ParseFloat(arg, 64)
		if !hasArg || err != nil || !finiteNonNegative(sigma) {
			return ie, usageErrorf("--idle-estimate: %q: want noisy:SIGMA with SIGMA a non-negative number, e.g. noisy:0.5", o.idleEstimate)
		}
		ie.Sigma, ie.Seed = sigma, o.seed
	default:
		return ie, usageErrorf("--idle-estimate: %q is not one of none, true, noisy:SIGMA", o.idleEstimate)
	}
	return ie, nil
}

// eventsWithTruth is the trace's events, followed, when the idle
// estimates need the truth and --window cut the trace short, by the
// events after the window (read again without its end): they are not
// replayed, but they say when the holes still open at its end close.
func (o *simOptions) eventsWithTruth(tr *sim.Trace, window [2]float64, ie sim.IdleEstimate) ([]sim.Event, error) {
	if ie.Mode == sim.IdleEstimateNone || window[1] == 0 {
		return tr.Events, nil
	}
	rest, err := o.parseTrace(sim.SourceOptions{Window: [2]float64{window[0], 0}, MinHole: o.minHole, MaxNodes: o.maxNodes})
	if err != nil {
		return nil, err
	}
	events := slices.Clone(tr.Events)
	for _, ev := range rest.Events {
		if ev.Time >= tr.End {
			events = append(events, ev)
		}
	}
	return events, nil
}
