// Package specdecode is the strict decoder behind gleaner.DecodeSpec: it
// parses a YAML or JSON campaign spec into one node tree with the input's
// lines and columns, walks the tree against the spec's Go type through its
// json tags (unknown, repeated and mistyped fields are errors that name
// the field and where it is), and returns the tree as JSON values for
// encoding/json to fill the type, so that YAML and JSON cannot diverge.
//
// It bounds what hostile input can cost: values and their bytes (YAML
// aliases expanded), JSON nesting, self-referring aliases. It is pure (no
// I/O, no Temporal) and knows no Gleaner type but hpo.Value; the root
// package turns its *Error into the public *gleaner.DecodeError.
package specdecode

import (
	"context"
	"reflect"

	"gopkg.in/yaml.v3"
)

// Error is input that does not decode: where, which field, why.
type Error struct {
	// Line and Column locate the error (1-based); 0 when unknown.
	Line, Column int
	// Field is the path of the field at fault, as Validate names fields:
	// "budget.max_trials", "space[2].choices[0]"; "" for the whole spec.
	Field string
	Msg   string
}

func (e *Error) Error() string { return e.Msg }

// Decode parses data (JSON when json is set, else YAML) and checks it
// against type t: it returns the spec as JSON values (map[string]any,
// []any, string, json.Number, bool), ready for encoding/json to decode
// into a t. maxBytes bounds the bytes of its scalars and keys, aliases
// expanded. Errors are *Error, or ctx's error once ctx is done (checked
// between values).
func Decode(ctx context.Context, data []byte, json bool, t reflect.Type, maxBytes int) (any, error) {
	var root *yaml.Node
	var err error
	if json {
		root, err = newJSONParser(ctx, data).parse()
	} else {
		root, err = parseYAML(data)
	}
	if err != nil {
		return nil, err
	}
	d := decoder{json: json, st: &walkState{ctx: ctx, maxBytes: maxBytes, expanding: map[*yaml.Node]bool{}}}
	v, err := d.value(root, t, "")
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, &Error{Line: root.Line, Column: root.Column, Msg: "the spec is empty"}
	}
	return v, nil
}
