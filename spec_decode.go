package gleaner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/gleaner-hpc/gleaner/internal/specdecode"
)

// Format is the syntax a campaign spec is written in. Both formats share
// one schema: the json tags of CampaignSpec.
type Format string

const (
	FormatYAML Format = "yaml"
	FormatJSON Format = "json"
)

// FormatFromPath is the format a file's extension names: .yaml or .yml
// (YAML), .json (JSON), in any case.
func FormatFromPath(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return FormatYAML, nil
	case ".json":
		return FormatJSON, nil
	}
	return "", fmt.Errorf("%s: cannot tell the spec's format from the extension %q (want .yaml, .yml or .json)", path, filepath.Ext(path))
}

// DecodeError is a spec that does not decode: where, which field, why.
type DecodeError struct {
	// File is the spec's path (set by LoadSpec), or "".
	File string
	// Line and Column locate the error (1-based); 0 when unknown.
	Line, Column int
	// Field is the path of the field at fault, as Validate names fields:
	// "budget.max_trials", "space[2].choices[0]"; "" for the whole spec.
	Field string
	Msg   string
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Column)
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// MaxSpecBytes bounds a campaign spec: the file (or the data DecodeSpec is
// given) and the JSON the decoded spec encodes to. The spec travels as the
// campaign workflow's input, and again in every continue-as-new input with
// the campaign's state; Temporal refuses a payload over its blob size limit
// (2 MB by default, limit.blobSize.error) with a bare ResourceExhausted.
// 1 MiB leaves about half of that to the state and the envelope, and is
// 500 times the largest spec in examples/. A spec that needs more carries
// data that belongs in a file the trainer reads.
const MaxSpecBytes = 1 << 20

// errSpecTooLarge is the message of a spec over MaxSpecBytes; exact says
// whether size is the spec's size or a lower bound.
func errSpecTooLarge(what string, size int64, exact bool) string {
	more := ""
	if !exact {
		more = "more than "
	}
	return fmt.Sprintf("%s is %s%d bytes, over the limit of %d bytes (1 MiB, gleaner.MaxSpecBytes); "+
		"put large data in a file the trainer reads, not in the spec", what, more, size, MaxSpecBytes)
}

// DecodeSpec decodes a campaign spec strictly and returns it as written:
// callers apply WithDefaults and Validate (or use DecodeAndValidate).
//
// Strict means: an unknown or repeated field is an error naming it, a value
// of the wrong type is an error naming its field, and anything after the
// spec (a second YAML document, more JSON) is an error. Errors are
// *DecodeError with the line and column where the input gives them.
// Durations are strings like "30s" or "5m". In YAML, a bare scalar where a
// string is expected is taken as written: `choices: [16, 32]` are the
// strings "16" and "32" (JSON wants "16"). Empty lists and maps decode as
// nil. Data over MaxSpecBytes is a *DecodeError before anything is
// decoded; so is a spec whose values (YAML aliases expanded) or whose JSON
// encoding add up to more.
func DecodeSpec(data []byte, format Format) (CampaignSpec, error) {
	return DecodeSpecContext(context.Background(), data, format)
}

// DecodeSpecContext is DecodeSpec that stops, returning ctx.Err(), once ctx
// is done: it checks ctx between values.
func DecodeSpecContext(ctx context.Context, data []byte, format Format) (CampaignSpec, error) {
	if format != FormatYAML && format != FormatJSON {
		return CampaignSpec{}, fmt.Errorf("spec format %q is not one of yaml, json", format)
	}
	if len(data) > MaxSpecBytes {
		return CampaignSpec{}, &DecodeError{Msg: errSpecTooLarge("the spec", int64(len(data)), true)}
	}
	if err := ctx.Err(); err != nil {
		return CampaignSpec{}, err
	}
	v, err := specdecode.Decode(ctx, data, format == FormatJSON, reflect.TypeFor[CampaignSpec](), MaxSpecBytes)
	if err != nil {
		var de *specdecode.Error
		if errors.As(err, &de) {
			return CampaignSpec{}, &DecodeError{Line: de.Line, Column: de.Column, Field: de.Field, Msg: de.Msg}
		}
		return CampaignSpec{}, err
	}
	// The tree is checked against the schema; encoding/json now fills the
	// struct through the same json tags, so YAML and JSON cannot diverge.
	raw, err := json.Marshal(v)
	if err != nil {
		return CampaignSpec{}, fmt.Errorf("campaign spec: %w", err)
	}
	if len(raw) > MaxSpecBytes {
		// Short YAML scalars grow quoted, escapes grow: the server sees this.
		return CampaignSpec{}, &DecodeError{Msg: errSpecTooLarge("the spec as JSON", int64(len(raw)), true)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var spec CampaignSpec
	if err := dec.Decode(&spec); err != nil {
		return CampaignSpec{}, fmt.Errorf("campaign spec: %w", err)
	}
	return spec, nil
}

// DecodeAndValidate decodes a spec, applies its defaults and validates it.
func DecodeAndValidate(data []byte, format Format) (CampaignSpec, error) {
	spec, err := DecodeSpec(data, format)
	if err != nil {
		return CampaignSpec{}, err
	}
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return CampaignSpec{}, err
	}
	return spec, nil
}

// LoadSpec reads and decodes the spec in path (see DecodeSpec), in the
// format its extension names (FormatFromPath), and reads its space_file,
// relative to path's directory (CampaignSpec.ExpandSpaceFile). Errors name
// the file. It
// reads at most MaxSpecBytes+1 bytes: a larger file is a *DecodeError.
func LoadSpec(path string) (CampaignSpec, error) {
	return LoadSpecContext(context.Background(), path)
}

// LoadSpecContext is LoadSpec that stops, returning ctx.Err() (wrapped),
// once ctx is done: see DecodeSpecContext.
func LoadSpecContext(ctx context.Context, path string) (CampaignSpec, error) {
	format, err := FormatFromPath(path)
	if err != nil {
		return CampaignSpec{}, err
	}
	data, err := readSpec(path)
	if err != nil {
		return CampaignSpec{}, err
	}
	spec, err := DecodeSpecContext(ctx, data, format)
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			de.File = path
			return CampaignSpec{}, de
		}
		return CampaignSpec{}, fmt.Errorf("%s: %w", path, err)
	}
	if spec, err = spec.ExpandSpaceFile(filepath.Dir(path)); err != nil {
		return CampaignSpec{}, fmt.Errorf("%s: %w", path, err)
	}
	return spec, nil
}

// readSpec reads the file at path, or fails with a *DecodeError once it
// has read more than MaxSpecBytes.
func readSpec(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the campaign spec: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the campaign spec %s: %w", path, err)
	}
	if len(data) > MaxSpecBytes {
		size, exact := int64(MaxSpecBytes), false
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxSpecBytes {
			size, exact = st.Size(), true
		}
		return nil, &DecodeError{File: path, Msg: errSpecTooLarge("the spec", size, exact)}
	}
	return data, nil
}

// LoadAndValidate loads the spec in path (LoadSpec), applies its defaults
// and validates it; errors name the file and the field.
func LoadAndValidate(path string) (CampaignSpec, error) {
	spec, err := LoadSpec(path)
	if err != nil {
		return CampaignSpec{}, err
	}
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return CampaignSpec{}, fmt.Errorf("%s: %w", path, err)
	}
	return spec, nil
}
