package gleaner

import (
	"fmt"
	"unicode/utf8"
)

// MaxNameLength bounds campaign and pool names. A name becomes a directory
// name, part of Temporal workflow ids ("gleaner-campaign-<name>") and of
// search attribute values; 63 keeps every derived path element far below
// the 255-byte limit of common file systems.
const MaxNameLength = 63

// ValidateName checks a campaign or pool name: 1 to MaxNameLength ASCII
// letters, digits, '.', '_' and '-', starting with a letter or a digit.
// Such a name is a valid, distinct path element as it is: no separators,
// never "." or "..", no leading '-' that a command line would take for a
// flag, no spaces or quotes for a shell to split. field names the field
// in the error ("name", "pool", "--pool").
func ValidateName(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s: empty", field)
	case len(name) > MaxNameLength:
		return fmt.Errorf("%s: %d characters, at most %d allowed", field, utf8.RuneCountInString(name), MaxNameLength)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i > 0 {
			ok = ok || c == '.' || c == '_' || c == '-'
		}
		if !ok {
			if i == 0 {
				return fmt.Errorf("%s: %q must start with a letter or a digit", field, name)
			}
			return fmt.Errorf("%s: %q has %q at byte %d; use letters, digits, '.', '_' and '-'", field, name, c, i)
		}
	}
	return nil
}
