package searchbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// scanTable reads a generated CSV table: # comments and blank lines
// skipped, then header exactly, then rows of fields comma-separated
// fields each, handed to row with their line number. Errors name the
// line; a table without rows is one.
func scanTable(b []byte, header string, fields int, row func(n int, f []string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	seenHeader, rows := false, 0
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !seenHeader {
			if line != header {
				return fmt.Errorf("line %d: header %q, want %s", n, line, header)
			}
			seenHeader = true
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != fields {
			return fmt.Errorf("line %d: %d fields, want %d", n, len(f), fields)
		}
		if err := row(n, f); err != nil {
			return err
		}
		rows++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if rows == 0 {
		return errors.New("no rows")
	}
	return nil
}
