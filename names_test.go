package gleaner_test

import (
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // "" if valid, else a substring of the error
	}{
		{"c_d", ""},
		{"x.y-z_1", ""},
		{"9lives", ""},
		{"A", ""},
		{strings.Repeat("a", gleaner.MaxNameLength), ""},
		{"", "empty"},
		{"c/d", `has '/' at byte 1`},
		{`c\d`, `has '\\' at byte 1`},
		{"..", "must start with a letter or a digit"},
		{".", "must start with a letter or a digit"},
		{".hidden", "must start with a letter or a digit"},
		{"-x", "must start with a letter or a digit"},
		{"_x", "must start with a letter or a digit"},
		{strings.Repeat("a", gleaner.MaxNameLength+1), "64 characters, at most 63 allowed"},
		{strings.Repeat("a", 300), "300 characters, at most 63 allowed"},
		{"a b", `has ' ' at byte 1`},
		{`"q"`, "must start with a letter or a digit"},
		{`'q'`, "must start with a letter or a digit"},
		{`q"`, `has '"' at byte 1`},
		{"🚀", "must start with a letter or a digit"},
		{"a🚀", `has '🚀' at byte 1`},
		{"é", "must start with a letter or a digit"},
		{"a\x00b", `has '\x00' at byte 1`},
		{"a\nb", `has '\n' at byte 1`},
		{"a\n", `has '\n' at byte 1`},
		{"a\tb", `has '\t' at byte 1`},
		{"a:b", `has ':' at byte 1`},
		{"a*", `has '*' at byte 1`},
	} {
		err := gleaner.ValidateName("pool", tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ValidateName(%q): %v, want nil", tc.name, err)
		case tc.want != "" && err == nil:
			t.Errorf("ValidateName(%q) = nil, want an error with %q", tc.name, tc.want)
		case err != nil && (!strings.HasPrefix(err.Error(), "pool: ") || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ValidateName(%q): %q, want it to start \"pool: \" and contain %q", tc.name, err, tc.want)
		}
	}
}

// A spec's name and pool are names; errors name the field.
func TestValidateChecksNameAndPool(t *testing.T) {
	valid := func() gleaner.CampaignSpec {
		s := fullSpec()
		return s.WithDefaults()
	}
	if err := valid().Validate(); err != nil {
		t.Fatal(err)
	}
	noPool := fullSpec()
	noPool.Pool = ""
	if err := noPool.WithDefaults().Validate(); err != nil {
		t.Errorf("the default pool: %v", err)
	}
	for _, tc := range []struct {
		name, pool string
		want       string
	}{
		{"../etc", "gpu", "name: \"../etc\" must start with a letter or a digit"},
		{"my campaign", "gpu", "name: \"my campaign\" has ' ' at byte 2"},
		{strings.Repeat("n", 64), "gpu", "name: 64 characters, at most 63 allowed"},
		{"demo", "a/b", "pool: \"a/b\" has '/' at byte 1"},
		{"demo", "-gpu", "pool: \"-gpu\" must start with a letter or a digit"},
	} {
		s := valid()
		s.Name, s.Pool = tc.name, tc.pool
		if err := s.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("name %q pool %q: %v, want %q", tc.name, tc.pool, err, tc.want)
		}
	}

	_, err := gleaner.DecodeAndValidate([]byte(strings.Replace(fullYAML, "pool: gpu", "pool: gpu pool", 1)), gleaner.FormatYAML)
	if err == nil || !strings.HasPrefix(err.Error(), "pool: ") {
		t.Errorf("a YAML spec with pool \"gpu pool\": %v", err)
	}
}
