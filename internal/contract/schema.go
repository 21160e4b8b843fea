package contract

import (
	"reflect"
	"sort"
	"strconv"
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
		p := constrain(g.of(f.Type), f)
		req := g.dir == Input && hasOption(f, "required")
		if req {
			switch {
			case p["type"] == "string":
				p["minLength"] = 1
			case p["type"] != nil && isArrayType(p["type"]):
				p["minItems"] = 1
			}
		}
		if g.dir == Input && !req {
			// null means "not given" on input.
			p = nullable(p)
		}
		if d := g.doc(f.Owner, f.GoName); d != "" {
			p = withDescription(p, d)
		}
		props[f.Name] = p
		switch g.dir {
		case Input:
			if req {
				required = append(required, f.Name)
			}
			for _, a := range f.Aliases {
				props[a] = withDescription(nullable(g.of(f.Type)), "Alias of "+f.Name+"; give one of the two.")
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

func isArrayType(t any) bool {
	switch v := t.(type) {
	case string:
		return v == "array"
	case []any:
		return len(v) > 0 && v[0] == "array"
	}
	return false
}

// nullable lets s also be null.
func nullable(s map[string]any) map[string]any {
	switch t := s["type"].(type) {
	case string:
		out := copyMap(s)
		out["type"] = []any{t, "null"}
		return out
	case []any:
		return s // already a union (slices and maps are nullable)
	}
	if _, ok := s["$ref"]; ok {
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	if _, ok := s["anyOf"]; ok {
		return s
	}
	return s // {} accepts null already
}

func copyMap(s map[string]any) map[string]any {
	out := make(map[string]any, len(s)+2)
	for k, v := range s {
		out[k] = v
	}
	return out
}

// constrain adds the range a field declares in its tag: `contract:"min=64"`
// (with "zero": 0 too, meaning the default), "max=2", "enum=a|b" (a
// string's values; "" is allowed when the field may be omitted),
// "pattern=…" (a string's regular expression, without commas),
// "maxlen=N" and "maxitems=N" (an array's length). Check enforces the same
// tags.
func constrain(s map[string]any, f Field) map[string]any {
	sf, ok := f.Owner.FieldByName(f.GoName)
	if !ok {
		return s
	}
	tag := sf.Tag.Get("contract")
	if tag == "" {
		return s
	}
	out := copyMap(s)
	zero := false
	var minimum any
	for _, part := range strings.Split(tag, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "min":
			minimum = number(v)
		case "max":
			out["maximum"] = number(v)
		case "zero":
			zero = true
		case "enum":
			var vals []any
			for _, e := range strings.Split(v, "|") {
				vals = append(vals, e)
			}
			if f.OmitEmpty {
				vals = append(vals, "")
			}
			out["enum"] = vals
		case "pattern":
			out["pattern"] = v
		case "maxlen":
			out["maxLength"] = number(v)
		case "maxitems":
			out["maxItems"] = number(v)
		}
	}
	if minimum != nil {
		if zero {
			out["anyOf"] = []any{map[string]any{"const": 0}, map[string]any{"minimum": minimum}}
		} else {
			out["minimum"] = minimum
		}
	}
	return out
}

func number(v string) any {
	if i, err := strconv.ParseInt(v, 10, 64); err == nil {
		return i
	}
	f, _ := strconv.ParseFloat(v, 64)
	return f
}
