package searchproto

import (
	"strings"
	"testing"
)

// Request lines come from any program: none may crash a session, and
// every line gets exactly one answer line.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"event":"initial"}`,
		`{"event":"created","id":"t00001"}`,
		`{"event":"reported","id":"t00001","samples":640,"metric":0.5}`,
		`{"event":"finished","id":"t00001","metric":null,"outcome":"stopped"}`,
		`{"event":"restore","snapshot":{"type":"random","state":{"rng":"AAAA"}}}`,
		`{"event":"snapshot"}`,
		`{"event":1e999}`,
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		_, _ = ParseRequest([]byte(line))
		if strings.ContainsAny(line, "\n\r") {
			return
		}
		var out strings.Builder
		if err := Serve(testConfig(), strings.NewReader(`{"event":"initial"}`+"\n"+line+"\n"), &out); err != nil {
			t.Fatal(err)
		}
		want := 2
		if strings.TrimSpace(line) == "" {
			want = 1
		}
		if got := strings.Count(out.String(), "\n"); got != want {
			t.Fatalf("%d answer lines for %d requests:\n%s", got, want, out.String())
		}
	})
}
