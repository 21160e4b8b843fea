package contract

import (
	"reflect"
	"sort"
	"strings"
)

// SchemaDialect is the JSON Schema draft the generated schemas declare.
const SchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// Describer returns the documentation of a struct type (goField "") or of
// one of its fields, or "".
type Describer func(owner reflect.Type, goField string) string

// Direction tells an input schema, which lists aliases and required
// members, from an output schema, which lists the members always present.
type Direction int

const (
	// Input is a shape a caller sends: aliases are accepted, members tagged
	// `contract:"required"` are required.
	Input Direction = iota
	// Output is a shape memagent returns: members without omitempty are
	// always present.
	Output
)

// Schema returns the JSON Schema of t, a struct type, with every struct it
// reaches under $defs. id is the schema's $id, title its title. The result
// marshals deterministically (encoding/json sorts map keys).
func Schema(t reflect.Type, id, title string, dir Direction, describe Describer) map[string]any {
	g := &schemaGen{defs: map[string]any{}, names: map[reflect.Type]string{}, dir: dir, describe: describe}
	g.name(t)
	root := g.of(t)
	out := map[string]any{
		"$schema": SchemaDialect,
		"$id":     id,
		"title":   title,
	}
	for k, v := range root {
		out[k] = v
	}
	if len(g.defs) > 0 {
		out["$defs"] = g.defs
	}
	return out
}

type schemaGen struct {
	defs     map[string]any
	names    map[reflect.Type]string
	used     map[string]reflect.Type
	dir      Direction
	describe Describer
}

// name returns the $defs name of struct type t: its Go name, qualified by
// its package's last element when two packages use one name.
func (g *schemaGen) name(t reflect.Type) string {
	if n, ok := g.names[t]; ok {
		return n
	}
	if g.used == nil {
		g.used = map[string]reflect.Type{}
	}
	n := t.Name()
	if other, ok := g.used[n]; ok && other != t {
		pkg := t.PkgPath()
		n = pkg[strings.LastIndex(pkg, "/")+1:] + "." + n
	}
	g.used[n] = t
	g.names[t] = n
	return n
}

func (g *schemaGen) of(t reflect.Type) map[string]any {
	nullable := false
	for t.Kind() == reflect.Pointer {
		t, nullable = t.Elem(), true
	}
	var s map[string]any
	switch {
	case t == timeType:
		s = map[string]any{"type": "string", "format": "date-time"}
	case t == rawMessageType, t.Kind() == reflect.Interface:
		return map[string]any{}
	}
	if s == nil {
		switch t.Kind() {
		case reflect.Struct:
			if t.Name() == "" {
				return g.object(t)
			}
			n := g.name(t)
			if _, ok := g.defs[n]; !ok {
				g.defs[n] = map[string]any{} // placeholder: breaks cycles
				g.defs[n] = g.object(t)
			}
			ref := map[string]any{"$ref": "#/$defs/" + n}
			if nullable {
				return map[string]any{"anyOf": []any{ref, map[string]any{"type": "null"}}}
			}
			return ref
		case reflect.Map:
			s = map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
			nullable = true
		case reflect.Slice, reflect.Array:
			if t.Elem().Kind() == reflect.Uint8 {
				s = map[string]any{"type": "string", "contentEncoding": "base64"}
			} else {
				s = map[string]any{"type": "array", "items": g.of(t.Elem())}
			}
			nullable = nullable || t.Kind() == reflect.Slice
		case reflect.String:
			s = map[string]any{"type": "string"}
		case reflect.Bool:
			s = map[string]any{"type": "boolean"}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			s = map[string]any{"type": "integer"}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			s = map[string]any{"type": "integer", "minimum": 0}
		case reflect.Float32, reflect.Float64:
			s = map[string]any{"type": "number"}
		default:
			return map[string]any{}
		}
	}
	if nullable {
		s["type"] = []any{s["type"], "null"}
	}
	return s
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range Fields(t) {
		p := g.of(f.Type)
		if d := g.doc(f.Owner, f.GoName); d != "" {
			p = withDescription(p, d)
		}
		props[f.Name] = p
		switch g.dir {
		case Input:
			if hasOption(f, "required") {
				required = append(required, f.Name)
			}
			for _, a := range f.Aliases {
				props[a] = withDescription(g.of(f.Type), "Alias of "+f.Name+"; give one of the two.")
			}
		case Output:
			if !f.OmitEmpty {
				required = append(required, f.Name)
			}
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = required
	}
	if d := g.doc(t, ""); d != "" {
		s["description"] = d
	}
	return s
}

func (g *schemaGen) doc(owner reflect.Type, goField string) string {
	if g.describe == nil || owner == nil {
		return ""
	}
	return g.describe(owner, goField)
}

func withDescription(s map[string]any, d string) map[string]any {
	if _, ok := s["$ref"]; ok {
		// Siblings of $ref are allowed in 2020-12, but keep refs plain for
		// older tools: wrap.
		return map[string]any{"allOf": []any{s}, "description": d}
	}
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out["description"] = d
	return out
}

func hasOption(f Field, opt string) bool {
	sf, ok := f.Owner.FieldByName(f.GoName)
	if !ok {
		return false
	}
	for _, part := range strings.Split(sf.Tag.Get("contract"), ",") {
		if strings.TrimSpace(part) == opt {
			return true
		}
	}
	return false
}
