package specdecode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

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
		return nil, &Error{Line: line, Column: col, Msg: "trailing data after the spec"}
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
		return &Error{Line: line, Column: col, Msg: "invalid JSON: " + strings.TrimPrefix(se.Error(), "json: ")}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		line, col := p.pos(len(p.data))
		if len(bytes.TrimSpace(p.data)) == 0 {
			return &Error{Msg: "the spec is empty"}
		}
		return &Error{Line: line, Column: col, Msg: "invalid JSON: unexpected end of input"}
	}
	return &Error{Msg: "invalid JSON: " + err.Error()}
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
			return nil, &Error{Line: line, Column: col, Msg: fmt.Sprintf("invalid JSON: lists and objects nested more than %d deep", maxJSONDepth)}
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
			return nil, &Error{Line: line, Column: col, Msg: fmt.Sprintf("invalid JSON: %v where %v was expected", tok, end)}
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
