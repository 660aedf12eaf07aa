package specdecode

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gleaner-hpc/gleaner/hpo"
)

var (
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
	maxBytes  int             // bounds bytes
	nodes     int
	bytes     int // of scalars and keys, aliases expanded
	expanding map[*yaml.Node]bool
}

// maxSpecNodes bounds the values a spec may hold, aliases expanded.
const maxSpecNodes = 1 << 16

func (d decoder) errorf(n *yaml.Node, field, format string, args ...any) error {
	return &Error{Line: n.Line, Column: n.Column, Field: field, Msg: fmt.Sprintf(format, args...)}
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
	if d.st.bytes += len(n.Value); d.st.bytes > d.st.maxBytes {
		return d.errorf(at, field, "the spec's values add up to more than %d bytes (aliases expanded; gleaner.MaxSpecBytes)", d.st.maxBytes)
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
