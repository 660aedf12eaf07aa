package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// devLogFile is gleaner dev's log, in its state directory (--log-file).
const devLogFile = "gleaner-dev.log"

// devShortLineMax bounds the line gleaner dev shows on the terminal for a
// logged error: the whole record is in the log file.
const devShortLineMax = 160

// devLogHandler is gleaner dev's logging: every record at --log-level or
// above goes, whole, to the log file; an error also shows on the terminal
// as one short line (its message and the first line of its error, cut),
// so that a failing trainer's ~400-character SDK records, its log lines
// and all, do not spill over the progress.
type devLogHandler struct {
	file slog.Handler
	term *devTerm
	// attrs are the handler's own (With): the short line looks in them
	// for the error too.
	attrs []slog.Attr
}

// devTerm is where the short lines go, shared by a handler and those
// derived from it.
type devTerm struct {
	mu  sync.Mutex
	w   io.Writer
	tty bool // redraw over the progress line
}

// newDevLogHandler logs to file at level, errors in short on term.
func newDevLogHandler(file, term io.Writer, level slog.Level) *devLogHandler {
	return &devLogHandler{
		file: slog.NewTextHandler(file, &slog.HandlerOptions{Level: level}),
		term: &devTerm{w: term, tty: isTerminal(term)},
	}
}

func (h *devLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.file.Enabled(ctx, l)
}

func (h *devLogHandler) Handle(ctx context.Context, r slog.Record) error {
	var err error
	if h.file.Enabled(ctx, r.Level) {
		err = h.file.Handle(ctx, r)
	}
	if r.Level >= slog.LevelError {
		h.term.say(shortLogLine(r, h.attrs))
	}
	return err
}

func (h *devLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &devLogHandler{file: h.file.WithAttrs(attrs), term: h.term, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

func (h *devLogHandler) WithGroup(name string) slog.Handler {
	return &devLogHandler{file: h.file.WithGroup(name), term: h.term, attrs: h.attrs}
}

func (t *devTerm) say(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tty {
		line = "\r\x1b[K" + line // over the progress line, which is redrawn
	}
	fmt.Fprintln(t.w, line)
}

// shortLogLine is a log record in one line of at most devShortLineMax
// runes: "gleaner dev: error: MESSAGE: ERROR'S FIRST LINE".
func shortLogLine(r slog.Record, attrs []slog.Attr) string {
	cause := ""
	find := func(a slog.Attr) bool {
		if k := strings.ToLower(a.Key); k == "error" || k == "err" {
			cause = a.Value.String()
			return false
		}
		return true
	}
	for _, a := range attrs {
		find(a)
	}
	r.Attrs(find)
	msg := strings.TrimSuffix(strings.TrimSpace(r.Message), ".")
	if cause != "" {
		msg += ": " + cause
	}
	return firstLine("gleaner dev: "+strings.ToLower(r.Level.String())+": "+msg, devShortLineMax)
}

// openDevLog opens (appending) the log file at path, its directory made;
// "-" is stderr itself, whole records and all, as before --log-file.
func openDevLog(path string, stderr io.Writer) (io.Writer, func(), error) {
	if path == "-" {
		return stderr, func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("--log-file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("--log-file: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
}

// logHandler is gleaner dev's log handler at level: to --log-file (its
// default in the state directory), errors in short on stderr; with
// --log-file -, every record whole on stderr.
func (d *devRun) logHandler(level slog.Level) (slog.Handler, func(), error) {
	path := d.o.logFile
	if path == "" {
		dir, err := devStateDir(nil)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w; pass --log-file", err)
		}
		path = filepath.Join(dir, devLogFile)
	}
	w, closeLog, err := openDevLog(path, d.stderr)
	if err != nil {
		return nil, nil, err
	}
	if path == "-" {
		return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}), closeLog, nil
	}
	d.say("the worker's log: %s", path)
	return newDevLogHandler(w, d.stderr, level), closeLog, nil
}
