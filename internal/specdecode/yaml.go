package specdecode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// parseYAML parses exactly one YAML document.
func parseYAML(data []byte) (_ *yaml.Node, err error) {
	defer func() {
		// yaml.v3 has panicked on hostile input before; a spec is input.
		if r := recover(); r != nil {
			err = &Error{Msg: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Msg: "the spec is empty"}
		}
		return nil, yamlError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlError(err)
	default:
		return nil, &Error{Line: next.Line, Column: next.Column, Msg: "a second YAML document follows the spec; a file holds one spec"}
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
		return &Error{Line: line, Msg: "invalid YAML: " + msg}
	}
	return &Error{Msg: "invalid YAML: " + msg}
}
