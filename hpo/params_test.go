package hpo

import "testing"

func TestParamsFormat(t *testing.T) {
	p := Params{"lr": Float(0.0012345678), "layers": Float(3), "opt": String("adam"), "big": Float(1.5e21)}
	for digits, want := range map[int]string{
		0: "big=1.5e+21 layers=3 lr=0.0012345678 opt=adam",
		4: "big=1.5e+21 layers=3 lr=0.001235 opt=adam",
	} {
		if got := p.Format(digits); got != want {
			t.Errorf("Format(%d) = %q, want %q", digits, got, want)
		}
	}
	if got := (Params{}).Format(0); got != "" {
		t.Errorf("no parameters: %q", got)
	}
}
