package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxHostlist bounds how many names one hostlist expression may expand to:
// a typo such as "n[1-100000000]" must not exhaust memory.
const MaxHostlist = 1 << 20

// ExpandHostlist expands a Slurm hostlist expression ("g[1-3,7],h01",
// "n[01-10]", "rack[1-2]-n[1-2]") into node names, in order. Ranges keep
// the width of zero-padded bounds, as Slurm does. "" and "(null)" are no
// nodes.
func ExpandHostlist(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" || s == "N/A" {
		return nil, nil
	}
	var out []string
	for _, item := range splitTop(s) {
		if item == "" {
			return nil, fmt.Errorf("hostlist %q: empty name", s)
		}
		names, err := expandItem(item, MaxHostlist-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", s, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTop splits at commas outside brackets.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandItem expands one name with any number of bracketed range lists.
func expandItem(item string, limit int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("%q: ']' without '['", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", item)
	}
	end += open
	prefix, body, rest := item[:open], item[open+1:end], item[end+1:]
	if strings.ContainsAny(prefix, "]") || strings.ContainsAny(body, "[") {
		return nil, fmt.Errorf("%q: unbalanced brackets", item)
	}
	suffixes, err := expandItem(rest, limit) // "" expands to [""]
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.ParseUint(lo, 10, 32)
		b, errB := strconv.ParseUint(hi, 10, 32)
		if lo == "" || hi == "" || errA != nil || errB != nil || b < a {
			return nil, fmt.Errorf("%q: range %q: want N or N-M with N ≤ M", item, r)
		}
		if int(b-a+1)*len(suffixes) > limit-len(out) {
			return nil, fmt.Errorf("%q: more than %d names", item, MaxHostlist)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for n := a; n <= b; n++ {
			num := strconv.FormatUint(n, 10)
			if len(num) < width {
				num = strings.Repeat("0", width-len(num)) + num
			}
			for _, sfx := range suffixes {
				out = append(out, prefix+num+sfx)
			}
		}
	}
	return out, nil
}
