package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MaxProblems bounds how many problems one FieldErrors lists; a payload of
// the wrong shape altogether would otherwise produce one per field.
const MaxProblems = 8

// FieldError is one problem with one JSON value, named by its path in the
// caller's document ("options.chunk_tokens", "questions[1].question").
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// FieldErrors are the problems Decode found, in document order.
type FieldErrors []*FieldError

func (es FieldErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// Decode unmarshals data, one JSON value, into v (a pointer to a struct)
// strictly: a member that v's type does not declare, a value of the wrong
// JSON type, an integer with a fraction or out of range, trailing data, or a
// field given twice under its name and its alias each fail, naming the JSON
// path, instead of being dropped or defaulted. A field may declare aliases in
// its tag, `contract:"alias=answers"`: the alias is accepted in its place.
// Exact matching is by the field's JSON name; encoding/json's
// case-insensitive matching is a near miss here, reported as such.
//
// Decode is deterministic (it iterates object members in sorted order) and
// does no I/O, so workflow code may call it.
func Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("contract: decode into %T: need a non-nil pointer", v)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return FieldErrors{{Msg: "not valid JSON: " + syntaxMessage(err)}}
	}
	if _, err := dec.Token(); err == nil {
		return FieldErrors{{Msg: "not one JSON value: data follows the first value"}}
	}
	c := &checker{}
	doc = c.check(doc, rv.Type().Elem(), "")
	if len(c.errs) > 0 {
		return c.errs
	}
	// The document now names every field by its JSON name: encoding/json
	// fills v exactly as the checker saw it.
	norm, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("contract: re-encode: %w", err)
	}
	if err := json.Unmarshal(norm, v); err != nil {
		return FieldErrors{{Msg: err.Error()}}
	}
	return nil
}

func syntaxMessage(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	return err.Error()
}

type checker struct {
	errs FieldErrors
}

func (c *checker) fail(path, format string, args ...any) {
	if len(c.errs) < MaxProblems {
		c.errs = append(c.errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
}

var (
	timeType        = reflect.TypeFor[time.Time]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// check reports every problem of doc against t and returns doc with field
// aliases renamed to their JSON names.
func (c *checker) check(doc any, t reflect.Type, path string) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if doc == nil {
		// null leaves the Go value as it is, as encoding/json does.
		return nil
	}
	switch {
	case t == timeType:
		c.checkTime(doc, path)
		return doc
	case t == rawMessageType, t.Kind() == reflect.Interface:
		return doc
	case reflect.PointerTo(t).Implements(unmarshalerType):
		// A type with its own JSON form checks itself in json.Unmarshal.
		return doc
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := doc.(map[string]any)
		if !ok {
			c.fail(path, "expected an object %s, got %s", fieldList(t), describe(doc))
			return doc
		}
		return c.checkStruct(obj, t, path)
	case reflect.Map:
		return c.checkMap(doc, t, path)
	case reflect.Slice, reflect.Array:
		return c.checkList(doc, t, path)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return c.checkInt(doc, t, path)
	}
	c.checkScalar(doc, t, path)
	return doc
}

func (c *checker) checkTime(doc any, path string) {
	s, ok := doc.(string)
	if !ok {
		c.fail(path, "expected an RFC 3339 time string, got %s", describe(doc))
	} else if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		c.fail(path, "expected an RFC 3339 time such as \"2026-01-02T15:04:05Z\", got %s", describe(s))
	}
}

func (c *checker) checkMap(doc any, t reflect.Type, path string) any {
	obj, ok := doc.(map[string]any)
	if !ok {
		c.fail(path, "expected an object, got %s", describe(doc))
		return doc
	}
	for _, k := range sortedKeys(obj) {
		obj[k] = c.check(obj[k], t.Elem(), join(path, k))
	}
	return obj
}

// checkList checks an array or slice; a byte slice is a base64 string.
func (c *checker) checkList(doc any, t reflect.Type, path string) any {
	if t.Elem().Kind() == reflect.Uint8 {
		if _, ok := doc.(string); !ok {
			c.fail(path, "expected a base64 string, got %s", describe(doc))
		}
		return doc
	}
	arr, ok := doc.([]any)
	if !ok {
		c.fail(path, "expected an array of %s, got %s", typeWord(t.Elem()), describe(doc))
		return doc
	}
	for i := range arr {
		arr[i] = c.check(arr[i], t.Elem(), fmt.Sprintf("%s[%d]", path, i))
	}
	return arr
}

// checkInt checks a signed integer and returns it in plain digits when it
// was written another way (500.0, 5e2).
func (c *checker) checkInt(doc any, t reflect.Type, path string) any {
	n, ok := doc.(json.Number)
	if !ok {
		c.fail(path, "expected an integer, got %s", describe(doc))
		return doc
	}
	if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err == nil {
		return doc
	}
	if !strings.ContainsAny(string(n), ".eE") {
		c.fail(path, "expected an integer that fits in %d bits, got %s", t.Bits(), n)
		return doc
	}
	// 500.0 and 5e2 are integers written another way: accept them
	// as encoding/json's readers in other languages write them.
	f, ferr := strconv.ParseFloat(string(n), 64)
	i := int64(f)
	if ferr != nil || f != float64(i) || reflect.Zero(t).OverflowInt(i) {
		c.fail(path, "expected an integer, got %s", n)
		return doc
	}
	return json.Number(strconv.FormatInt(i, 10))
}

// checkScalar checks a string, a bool, an unsigned integer or a float.
func (c *checker) checkScalar(doc any, t reflect.Type, path string) {
	switch t.Kind() {
	case reflect.String:
		if _, ok := doc.(string); !ok {
			c.fail(path, "expected a string, got %s", describe(doc))
		}
	case reflect.Bool:
		if _, ok := doc.(bool); !ok {
			c.fail(path, "expected true or false, got %s", describe(doc))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := doc.(json.Number)
		if !ok {
			c.fail(path, "expected a non-negative integer, got %s", describe(doc))
		} else if _, err := strconv.ParseUint(string(n), 10, t.Bits()); err != nil {
			c.fail(path, "expected a non-negative integer that fits in %d bits, got %s", t.Bits(), n)
		}
	case reflect.Float32, reflect.Float64:
		n, ok := doc.(json.Number)
		if !ok {
			c.fail(path, "expected a number, got %s", describe(doc))
		} else if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			c.fail(path, "expected a number within range, got %s", n)
		}
	}
}

func (c *checker) checkStruct(obj map[string]any, t reflect.Type, path string) any {
	fields := Fields(t)
	byName := make(map[string]Field, len(fields))
	byAlias := make(map[string]Field)
	for _, f := range fields {
		byName[f.Name] = f
		for _, a := range f.Aliases {
			byAlias[a] = f
		}
	}
	out := make(map[string]any, len(obj))
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		f, ok := byName[k]
		if !ok {
			if f, ok = byAlias[k]; ok {
				canon, both := obj[f.Name]
				switch {
				case v == nil:
					continue // null: not given
				case both && canon != nil:
					c.fail(join(path, k), "%s is an alias of %s, and both are given: keep one", k, join(path, f.Name))
					continue
				}
			}
		}
		if !ok {
			if m := nearest(k, fields); m != "" {
				c.fail(join(path, k), "unknown field; did you mean %s?", join(path, m))
			} else {
				c.fail(join(path, k), "unknown field; %s has %s", objectName(path), fieldList(t))
			}
			continue
		}
		if _, set := out[f.Name]; set && v == nil {
			continue // null beside its alias: the alias's value stands
		}
		out[f.Name] = c.check(v, f.Type, join(path, f.Name))
	}
	return out
}

func objectName(path string) string {
	if path == "" {
		return "the input"
	}
	return path
}

// Field is one JSON member of a struct type.
type Field struct {
	// Name is the JSON name.
	Name string
	// Aliases are other names accepted on input (tag `contract:"alias=x"`).
	Aliases   []string
	Type      reflect.Type
	OmitEmpty bool
	// GoName is the Go field's name, and Owner the struct that declares it
	// (an embedded struct's fields have that struct as Owner).
	GoName string
	Owner  reflect.Type
}

// Fields lists the JSON members of struct type t as encoding/json sees
// them: exported fields by their tag names, embedded structs without a tag
// flattened, "-" skipped.
func Fields(t reflect.Type) []Field {
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if sf.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, Fields(et)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := Field{Name: name, Type: ft, OmitEmpty: strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,"),
			GoName: sf.Name, Owner: t}
		for _, part := range strings.Split(sf.Tag.Get("contract"), ",") {
			if a, ok := strings.CutPrefix(strings.TrimSpace(part), "alias="); ok && a != "" {
				f.Aliases = append(f.Aliases, a)
			}
		}
		out = append(out, f)
	}
	return out
}

func fieldList(t reflect.Type) string {
	fs := Fields(t)
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = strconv.Quote(f.Name)
	}
	return "{" + strings.Join(names, ", ") + "}"
}

// nearest returns the field name k most likely meant: the same name in
// another case or with other separators, or one within a small edit
// distance (a third of the name, at least 1, at most 3).
func nearest(k string, fields []Field) string {
	canon := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(s))
	}
	best, bestD := "", 0
	for _, f := range fields {
		for _, name := range append([]string{f.Name}, f.Aliases...) {
			if canon(name) == canon(k) {
				return f.Name
			}
			d := EditDistance(strings.ToLower(k), strings.ToLower(name))
			limit := min(3, max(1, len(name)/3))
			if d <= limit && (best == "" || d < bestD) {
				best, bestD = f.Name, d
			}
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, in runes: the
// measure "did you mean" suggestions rank names by.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describe names a JSON value's type, with a short rendering of scalars.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			return fmt.Sprintf("a string of %d bytes", len(x))
		}
		return fmt.Sprintf("a string (%q)", x)
	case json.Number:
		return "a number (" + string(x) + ")"
	case bool:
		return fmt.Sprintf("a boolean (%t)", x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}

func typeWord(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "times"
	case t.Kind() == reflect.String:
		return "strings"
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map:
		return "objects"
	case t.Kind() == reflect.Bool:
		return "booleans"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integers"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "numbers"
	case t.Kind() == reflect.Slice:
		return "arrays"
	}
	return "values"
}
