package activities

import (
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Bounds of logTail: a failure message carries the trainer's last words,
// not its log.
const (
	logTailLines    = 5    // lines kept
	logTailLineMax  = 200  // runes per line
	logTailReadSize = 8192 // bytes read from the log's end
)

// logMark is where a trainer's log ended before a launch: the log of a
// run is appended to by each attempt, and a failure names the lines of
// the attempt that failed.
type logMark struct {
	path string
	size int64
}

// markLog notes the size of the log at path (0 when there is none yet).
func markLog(path string) logMark {
	m := logMark{path: path}
	if fi, err := os.Stat(path); err == nil {
		m.size = fi.Size()
	}
	return m
}

// tail is logTail of the launched trainer's log (its LogFile), from the
// mark when it is the log the mark was taken of.
func (m logMark) tail(logFile string) string {
	if logFile != m.path {
		return logTail(logFile, 0)
	}
	return logTail(logFile, m.size)
}

// logTail is the end of a trainer's log past offset from, for a failure
// message: "" when the log cannot be read, else "\n" and its last lines
// (up to logTailLines, blank ones skipped, each cut to logTailLineMax
// runes), each as "| line", or "\n(its log is empty)". The worker reads
// it where the log is, so the message tells the reason also to a person
// on another host.
func logTail(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	if from > fi.Size() {
		from = 0 // the log was replaced
	}
	start := max(from, fi.Size()-logTailReadSize)
	b, err := io.ReadAll(io.NewSectionReader(f, start, fi.Size()-start))
	if err != nil {
		return ""
	}
	text := strings.ToValidUTF8(string(b), "?")
	lines := strings.Split(strings.ReplaceAll(text, "\r", "\n"), "\n")
	if start > from && len(lines) > 1 {
		lines = lines[1:] // the first is cut
	}
	var kept []string
	for i := len(lines) - 1; i >= 0 && len(kept) < logTailLines; i-- {
		l := strings.TrimRight(lines[i], " \t")
		if strings.TrimSpace(l) == "" {
			continue
		}
		if utf8.RuneCountInString(l) > logTailLineMax {
			l = string([]rune(l)[:logTailLineMax-1]) + "…"
		}
		kept = append(kept, "| "+l)
	}
	if len(kept) == 0 {
		return "\n(it wrote nothing to its log)"
	}
	var out strings.Builder
	for i := len(kept) - 1; i >= 0; i-- {
		out.WriteString("\n" + kept[i])
	}
	return out.String()
}

// withFirstLine adds suffix to the first line of msg (a failure message
// whose further lines are its log's tail).
func withFirstLine(msg, suffix string) string {
	head, rest, cut := strings.Cut(msg, "\n")
	if !cut {
		return msg + suffix
	}
	return head + suffix + "\n" + rest
}
