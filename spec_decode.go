package gleaner

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gleaner-hpc/gleaner/hpo"
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
	var root *yaml.Node
	var err error
	if format == FormatYAML {
		root, err = parseYAML(data)
	} else {
		root, err = newJSONParser(ctx, data).parse()
	}
	if err != nil {
		return CampaignSpec{}, err
	}
	d := decoder{json: format == FormatJSON, st: &walkState{ctx: ctx, expanding: map[*yaml.Node]bool{}}}
	v, err := d.value(root, specType, "")
	if err != nil {
		return CampaignSpec{}, err
	}
	if v == nil {
		return CampaignSpec{}, &DecodeError{Line: root.Line, Column: root.Column, Msg: "the spec is empty"}
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
// format its extension names (FormatFromPath). Errors name the file. It
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

// parseYAML parses exactly one YAML document.
func parseYAML(data []byte) (_ *yaml.Node, err error) {
	defer func() {
		// yaml.v3 has panicked on hostile input before; a spec is input.
		if r := recover(); r != nil {
			err = &DecodeError{Msg: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &DecodeError{Msg: "the spec is empty"}
		}
		return nil, yamlError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlError(err)
	default:
		return nil, &DecodeError{Line: next.Line, Column: next.Column, Msg: "a second YAML document follows the spec; a file holds one spec"}
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0], nil
	}
	return &doc, nil
}

func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil {
		msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
		return &DecodeError{Line: line, Msg: "invalid YAML: " + msg}
	}
	return &DecodeError{Msg: "invalid YAML: " + msg}
}

// jsonParser parses exactly one JSON value into a YAML node tree with
// JSON's positions, so that one schema walk serves both formats.
type jsonParser struct {
	ctx  context.Context
	data []byte
	dec  *json.Decoder
	// lineStarts are the offsets just after each newline of data: pos is a
	// binary search, so that parsing stays linear in the input's size.
	lineStarts []int
	// scanned, when set (by tests), is told how many bytes of data each
	// position lookup reads.
	scanned func(n int)
}

func newJSONParser(ctx context.Context, data []byte) *jsonParser {
	p := &jsonParser{ctx: ctx, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	return p
}

func (p *jsonParser) parse() (*yaml.Node, error) {
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.next()
	if _, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		line, col := p.pos(off)
		return nil, &DecodeError{Line: line, Column: col, Msg: "trailing data after the spec"}
	}
	return n, nil
}

// next is the offset where the next token starts.
func (p *jsonParser) next() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	return off
}

// pos is the 1-based line and column (in bytes) of offset off.
func (p *jsonParser) pos(off int) (line, col int) {
	if p.lineStarts == nil {
		p.lineStarts = []int{}
		for i := 0; ; {
			j := bytes.IndexByte(p.data[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			p.lineStarts = append(p.lineStarts, i)
		}
		if p.scanned != nil {
			p.scanned(len(p.data))
		}
	}
	off = max(0, min(off, len(p.data)))
	// The lines that start at or before off.
	n := sort.SearchInts(p.lineStarts, off+1)
	start := 0
	if n > 0 {
		start = p.lineStarts[n-1]
	}
	return n + 1, off - start + 1
}

func (p *jsonParser) syntaxError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := p.pos(int(se.Offset))
		return &DecodeError{Line: line, Column: col, Msg: "invalid JSON: " + strings.TrimPrefix(se.Error(), "json: ")}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		line, col := p.pos(len(p.data))
		if len(bytes.TrimSpace(p.data)) == 0 {
			return &DecodeError{Msg: "the spec is empty"}
		}
		return &DecodeError{Line: line, Column: col, Msg: "invalid JSON: unexpected end of input"}
	}
	return &DecodeError{Msg: "invalid JSON: " + err.Error()}
}

// maxJSONDepth bounds the nesting of JSON lists and objects: a spec needs
// five levels, and json.Decoder's tokens have no bound of their own.
const maxJSONDepth = 100

func (p *jsonParser) value(depth int) (*yaml.Node, error) {
	if err := p.ctx.Err(); err != nil {
		return nil, err
	}
	line, col := p.pos(p.next())
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.syntaxError(err)
	}
	n := &yaml.Node{Line: line, Column: col}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxJSONDepth {
			return nil, &DecodeError{Line: line, Column: col, Msg: fmt.Sprintf("invalid JSON: lists and objects nested more than %d deep", maxJSONDepth)}
		}
		end := json.Delim('}')
		n.Kind, n.Tag = yaml.MappingNode, "!!map"
		if t == '[' {
			end, n.Kind, n.Tag = ']', yaml.SequenceNode, "!!seq"
		}
		for p.dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, k)
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if tok, err := p.dec.Token(); err != nil {
			return nil, p.syntaxError(err)
		} else if tok != end {
			line, col := p.pos(int(p.dec.InputOffset()))
			return nil, &DecodeError{Line: line, Column: col, Msg: fmt.Sprintf("invalid JSON: %v where %v was expected", tok, end)}
		}
		return n, nil
	case string:
		n.Kind, n.Tag, n.Value, n.Style = yaml.ScalarNode, "!!str", t, yaml.DoubleQuotedStyle
	case json.Number:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!float", t.String()
		if !strings.ContainsAny(n.Value, ".eE") {
			n.Tag = "!!int"
		}
	case bool:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", strconv.FormatBool(t)
	case nil:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
	}
	return n, nil
}

var (
	specType            = reflect.TypeFor[CampaignSpec]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	hpoValueType        = reflect.TypeFor[hpo.Value]()
)

// decoder walks a node tree against a Go type through its json tags,
// checking every field and type, and returns the tree as JSON values
// (map[string]any, []any, string, json.Number, bool); nil means absent.
type decoder struct {
	json bool // strings must be strings; YAML takes any scalar as written
	st   *walkState
}

// walkState guards against YAML aliases that refer to themselves or expand
// to a huge tree ("billion laughs").
type walkState struct {
	ctx       context.Context // checked at every value
	nodes     int
	bytes     int // of scalars and keys, aliases expanded
	expanding map[*yaml.Node]bool
}

// maxSpecNodes bounds the values a spec may hold, aliases expanded.
const maxSpecNodes = 1 << 16

func (d decoder) errorf(n *yaml.Node, field, format string, args ...any) error {
	return &DecodeError{Line: n.Line, Column: n.Column, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// describe names what a node holds, for type errors.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!str":
		return strconv.Quote(n.Value)
	case "!!null":
		return "null"
	}
	return n.Value
}

func (d decoder) value(n *yaml.Node, t reflect.Type, field string) (any, error) {
	if err := d.st.ctx.Err(); err != nil {
		return nil, err
	}
	if d.st.nodes++; d.st.nodes > maxSpecNodes {
		return nil, d.errorf(n, field, "the spec holds more than %d values (aliases expanded)", maxSpecNodes)
	}
	at := n // where the value is used: the alias, if it is one
	if n.Kind == yaml.AliasNode {
		target := n.Alias
		for target != nil && target.Kind == yaml.AliasNode {
			target = target.Alias
		}
		if target == nil || d.st.expanding[target] {
			return nil, d.errorf(n, field, "alias *%s refers to a value that contains it", n.Value)
		}
		d.st.expanding[target] = true
		defer delete(d.st.expanding, target)
		n = target
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.value(n.Content[0], t, field)
	}
	if err := d.count(at, n, field); err != nil {
		return nil, err
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if t == hpoValueType {
		// A parameter value (search.points): a number or a string.
		if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
			var f float64
			if d.number(n, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, d.errorf(n, field, "%s is not a finite number", n.Value)
			}
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
		}
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return nil, d.errorf(n, field, "%s is not a number or a string", describe(n))
		}
		return n.Value, nil
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		if n.Kind != yaml.ScalarNode || (d.json && n.Tag != "!!str") {
			return nil, d.errorf(n, field, "%s is not a string", describe(n))
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			return nil, d.errorf(n, field, "%v", err)
		}
		return n.Value, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		// An optional section or setting: null (above) leaves it unset.
		return d.value(n, t.Elem(), field)
	case reflect.Struct:
		return d.object(n, t, field)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil, d.errorf(n, field, "%s is not a list", describe(n))
		}
		if len(n.Content) == 0 {
			return nil, nil
		}
		out := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := d.element(e, t.Elem(), fmt.Sprintf("%s[%d]", field, i))
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("gleaner: spec field %s: map key %v is not a string", field, t.Key()))
		}
		if n.Kind != yaml.MappingNode {
			return nil, d.errorf(n, field, "%s is not a mapping", describe(n))
		}
		if len(n.Content) == 0 {
			return nil, nil
		}
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key, err := d.key(k, field)
			if err != nil {
				return nil, err
			}
			sub := join(field, key)
			if _, dup := out[key]; dup {
				return nil, d.errorf(k, sub, "set twice")
			}
			if out[key], err = d.element(v, t.Elem(), sub); err != nil {
				return nil, err
			}
		}
		return out, nil
	case reflect.String:
		if n.Kind != yaml.ScalarNode || (d.json && n.Tag != "!!str") {
			return nil, d.errorf(n, field, "%s is not a string", describe(n))
		}
		return n.Value, nil
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
			return nil, d.errorf(n, field, "%s is not true or false", describe(n))
		}
		return b, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || d.number(n, &i) != nil {
			return nil, d.errorf(n, field, "%s is not an integer", describe(n))
		}
		if reflect.New(t).Elem().OverflowInt(i) {
			return nil, d.errorf(n, field, "%d is out of range", i)
		}
		return json.Number(strconv.FormatInt(i, 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var u uint64
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || d.number(n, &u) != nil {
			return nil, d.errorf(n, field, "%s is not an integer from 0 to %d", describe(n), uint64(math.MaxUint64))
		}
		if reflect.New(t).Elem().OverflowUint(u) {
			return nil, d.errorf(n, field, "%d is out of range", u)
		}
		return json.Number(strconv.FormatUint(u, 10)), nil
	case reflect.Float32, reflect.Float64:
		var f float64
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || d.number(n, &f) != nil {
			return nil, d.errorf(n, field, "%s is not a number", describe(n))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || reflect.New(t).Elem().OverflowFloat(f) {
			return nil, d.errorf(n, field, "%s is not a finite number", n.Value)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	panic(fmt.Sprintf("gleaner: spec field %s has type %v, which DecodeSpec does not handle", field, t))
}

// number decodes a numeric scalar: JSON's as JSON reads it, YAML's as
// YAML does (0x1f, 1e3, .inf).
func (d decoder) number(n *yaml.Node, out any) error {
	if !d.json {
		return n.Decode(out)
	}
	var err error
	switch p := out.(type) {
	case *int64:
		*p, err = strconv.ParseInt(n.Value, 10, 64)
	case *uint64:
		*p, err = strconv.ParseUint(n.Value, 10, 64)
	case *float64:
		*p, err = strconv.ParseFloat(n.Value, 64)
	}
	return err
}

// element is a list item or map value: null is not allowed there.
func (d decoder) element(n *yaml.Node, t reflect.Type, field string) (any, error) {
	v, err := d.value(n, t, field)
	if err == nil && v == nil && n.Kind == yaml.ScalarNode {
		return nil, d.errorf(n, field, "null is not allowed here")
	}
	if v == nil && err == nil {
		// An empty list or mapping inside a list: keep it, as JSON would.
		switch t.Kind() {
		case reflect.Slice:
			return []any{}, nil
		case reflect.Map, reflect.Struct:
			return map[string]any{}, nil
		}
	}
	return v, err
}

func (d decoder) key(k *yaml.Node, field string) (string, error) {
	at := k
	for k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode || (d.json && k.Tag != "!!str") || k.Tag == "!!merge" {
		return "", d.errorf(k, field, "%s is not a field name", describe(k))
	}
	return k.Value, d.count(at, k, field)
}

// count adds the bytes of scalar n, used at at (an alias of n, or n), to
// the spec's: an alias of a long string, repeated, would otherwise make a
// small file a huge spec.
func (d decoder) count(at, n *yaml.Node, field string) error {
	if n.Kind != yaml.ScalarNode {
		return nil
	}
	if d.st.bytes += len(n.Value); d.st.bytes > MaxSpecBytes {
		return d.errorf(at, field, "the spec's values add up to more than %d bytes (aliases expanded; gleaner.MaxSpecBytes)", MaxSpecBytes)
	}
	return nil
}

// object checks a mapping against a struct's fields.
func (d decoder) object(n *yaml.Node, t reflect.Type, field string) (any, error) {
	if n.Kind != yaml.MappingNode {
		what := field
		if what == "" {
			what = "the spec"
		}
		return nil, d.errorf(n, field, "%s is not a mapping of fields: %s is", what, describe(n))
	}
	fields := structFields(t)
	out := map[string]any{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key, err := d.key(k, field)
		if err != nil {
			return nil, err
		}
		sub := join(field, key)
		ft, ok := fields[key]
		if !ok {
			return nil, d.errorf(k, sub, "unknown field; %s", knownFields(field, fields))
		}
		if _, dup := out[key]; dup {
			return nil, d.errorf(k, sub, "set twice")
		}
		val, err := d.value(v, ft, sub)
		if err != nil {
			return nil, err
		}
		out[key] = val // nil marks the field as seen
	}
	for k, v := range out {
		if v == nil {
			delete(out, k)
		}
	}
	return out, nil
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// structFields maps a struct's JSON names to their types.
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			// Embedded without a name: its fields are the parent's, as
			// encoding/json sees them.
			maps.Copy(out, structFields(f.Type))
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func knownFields(field string, fields map[string]reflect.Type) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	where := "a spec"
	if field != "" {
		where = field
	}
	return where + " has " + strings.Join(names, ", ")
}
