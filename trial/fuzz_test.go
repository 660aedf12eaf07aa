package trial

import (
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParseReport: any input either fails with ErrMalformedReport or yields
// a report whose counters are finite and non-negative, with no NaN metric,
// that EncodeReport renders to a line ParseReport reads back unchanged.
// Seeds live in testdata/fuzz/FuzzParseReport.
func FuzzParseReport(f *testing.F) {
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseReport(line)
		if err != nil {
			if !errors.Is(err, ErrMalformedReport) {
				t.Fatalf("error %v does not wrap ErrMalformedReport", err)
			}
			if !reflect.DeepEqual(r, Report{}) {
				t.Fatalf("error %v with non-zero report %+v", err, r)
			}
			return
		}
		if !finiteNonNeg(r.Samples) || r.Step < 0 || !finiteNonNeg(r.Epoch) || !finiteNonNeg(r.Time) || r.Batch < 0 || len(r.Model) > MaxModelName {
			t.Fatalf("accepted bad progress: %+v", r)
		}
		for name, v := range r.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("metric %q = %v", name, v)
			}
		}
		enc, err := EncodeReport(r)
		if errors.Is(err, errLineTooLong) {
			return // re-encoding may escape characters and outgrow the limit
		}
		if err != nil {
			t.Fatalf("EncodeReport(%+v): %v", r, err)
		}
		back, err := ParseReport(enc)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", enc, err)
		}
		if len(r.Metrics) == 0 {
			r.Metrics = nil // only null metrics: encoded as none
		}
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, r)
		}
	})
}

// FuzzLoadRendezvous: any values of the rendezvous variables either fail
// with an error naming one of them, or give a layout a partition of the
// nodes over the hosts could have, whose Vars read back unchanged. Seeds
// live in testdata/fuzz/FuzzLoadRendezvous.
func FuzzLoadRendezvous(f *testing.F) {
	names := []string{EnvNodes, EnvNumHosts, EnvNodeRank, EnvLocalNodes, EnvNodeOffset, EnvHostAddr, EnvMasterAddr, EnvMasterPort}
	f.Fuzz(func(t *testing.T, nodes, hosts, rank, local, offset, hostAddr, masterAddr, port string) {
		vars := map[string]string{}
		for i, v := range []string{nodes, hosts, rank, local, offset, hostAddr, masterAddr, port} {
			if v != "" {
				vars[names[i]] = v
			}
		}
		r, err := LoadRendezvousFrom(lookupIn(vars))
		if err != nil {
			name, _, _ := strings.Cut(err.Error(), ":")
			if !slices.Contains(names, name) {
				t.Fatalf("error %q names no rendezvous variable", err)
			}
			if r != (Rendezvous{}) {
				t.Fatalf("error %v with non-zero rendezvous %+v", err, r)
			}
			return
		}
		switch {
		case r.Nodes < 1 || r.NumHosts < 1 || r.NumHosts > r.Nodes:
			t.Fatalf("accepted %d hosts for %d nodes", r.NumHosts, r.Nodes)
		case r.NodeRank < 0 || r.NodeRank >= r.NumHosts:
			t.Fatalf("accepted rank %d of %d", r.NodeRank, r.NumHosts)
		case r.NodeOffset < r.NodeRank || r.Nodes-r.NodeOffset-r.LocalNodes < r.NumHosts-1-r.NodeRank || r.LocalNodes < 1:
			t.Fatalf("accepted a layout with a host of no node: %+v", r)
		case r.NodeRank == 0 && r.NodeOffset != 0:
			t.Fatalf("rank 0 does not start at node 0: %+v", r)
		case r.NodeRank == r.NumHosts-1 && r.NodeOffset+r.LocalNodes != r.Nodes:
			t.Fatalf("the last rank does not end at the last node: %+v", r)
		case r.HostAddr == "" || r.MasterAddr == "":
			t.Fatalf("accepted no address: %+v", r)
		case r.MasterPort < 0 || r.MasterPort > 65535 || (r.MasterPort == 0 && r.MultiHost()):
			t.Fatalf("accepted port %d on %d hosts", r.MasterPort, r.NumHosts)
		}
		back, err := LoadRendezvousFrom(lookupIn(rendezvousVars(r)))
		if err != nil || back != r {
			t.Fatalf("round trip of %+v: %+v, %v", r, back, err)
		}
	})
}

// FuzzLoadEnvBudget: any values of GLEANER_BUDGET and GLEANER_BUDGET_UNIT
// either fail with an error naming one of them, or give no budget, or a
// finite budget > 0 in one of the three units that the counters at the
// budget reach and zero counters do not; Vars read back unchanged. Seeds
// live in testdata/fuzz/FuzzLoadEnvBudget.
func FuzzLoadEnvBudget(f *testing.F) {
	dir := f.TempDir()
	params := filepath.Join(dir, "params.json")
	if err := os.WriteFile(params, []byte(`{}`), 0o644); err != nil {
		f.Fatal(err)
	}
	base := map[string]string{
		EnvParamsFile: params, EnvNodes: "1", EnvCheckpointDir: dir, EnvReportFile: filepath.Join(dir, "r.jsonl"),
	}
	f.Fuzz(func(t *testing.T, budget, unit string) {
		vars := maps.Clone(base)
		vars[EnvBudget], vars[EnvBudgetUnit] = budget, unit
		e, err := LoadEnvFrom(lookupIn(vars))
		if err != nil {
			name, _, _ := strings.Cut(err.Error(), ":")
			if name != EnvBudget && name != EnvBudgetUnit {
				t.Fatalf("error %q names neither budget variable", err)
			}
			if !reflect.DeepEqual(e, Env{}) {
				t.Fatalf("error %v with non-zero env %+v", err, e)
			}
			return
		}
		switch {
		case e.Budget == 0:
			if e.BudgetUnit != "" || e.BudgetReached(math.MaxFloat64, math.MaxInt64, math.MaxFloat64) {
				t.Fatalf("no budget, but unit %q or a budget reached", e.BudgetUnit)
			}
		case !(e.Budget > 0) || math.IsInf(e.Budget, 0):
			t.Fatalf("accepted budget %v", e.Budget)
		case e.BudgetUnit != BudgetSamples && e.BudgetUnit != BudgetSteps && e.BudgetUnit != BudgetEpochs:
			t.Fatalf("accepted unit %q", e.BudgetUnit)
		case e.BudgetReached(0, 0, 0):
			t.Fatalf("budget %v %s reached at zero", e.Budget, e.BudgetUnit)
		case e.Budget <= 1<<62 && !e.BudgetReached(e.Budget, int64(math.Ceil(e.Budget)), e.Budget):
			// (A step count, an int64, never reaches a larger budget.)
			t.Fatalf("budget %v %s not reached at itself", e.Budget, e.BudgetUnit)
		}
		set := map[string]string{}
		for _, kv := range e.Vars() {
			set[kv[0]] = kv[1]
		}
		back, err := LoadEnvFrom(lookupIn(set))
		if err != nil || !reflect.DeepEqual(back, e) {
			t.Fatalf("round trip of %+v: %+v, %v", e, back, err)
		}
	})
}
