package contract

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Check reports the values of v (a struct, or a pointer to one) outside the
// ranges their `contract` tags declare: the same tags Schema publishes
// (min, max, zero, maxlen, maxitems, enum), so that the schemas and the
// workflows' checks are one source; a pattern is left to the type's own
// Validate, which can say in words what it wants. Nested structs, pointers and
// slices are walked; paths are JSON paths ("options.chunk_tokens",
// "questions[3].id"). maxlen counts bytes here and characters in a schema:
// for the ASCII a limit is meant for they are the same, and bytes are what
// bounds memory. Check is pure and deterministic, so workflow code may
// call it.
func Check(v any) error { return CheckIn("", v) }

// CheckIn is Check of a value found at path in a larger document
// ("options"), so that its problems are named by their whole path.
func CheckIn(path string, v any) error {
	var errs FieldErrors
	checkValue(reflect.ValueOf(v), path, &errs)
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func checkValue(v reflect.Value, path string, errs *FieldErrors) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		for _, f := range Fields(v.Type()) {
			fv, ok := fieldValue(v, f)
			if !ok {
				continue
			}
			p := f.Name
			if path != "" {
				p = path + "." + f.Name
			}
			if sf, ok := f.Owner.FieldByName(f.GoName); ok {
				if msg := checkTag(fv, sf.Tag.Get("contract")); msg != "" && len(*errs) < MaxProblems {
					// The message names the field twice, as Validate's
					// messages do: "x (5) must be at least 8: raise x".
					*errs = append(*errs, &FieldError{Msg: p + " " + strings.ReplaceAll(msg, "%s", p)})
				}
			}
			checkValue(fv, p, errs)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			checkValue(v.Index(i), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	}
}

// fieldValue finds f's value in v, through the embedded structs that
// Fields flattens.
func fieldValue(v reflect.Value, f Field) (reflect.Value, bool) {
	if v.Type() == f.Owner {
		return v.FieldByName(f.GoName), true
	}
	for i := 0; i < v.NumField(); i++ {
		sf := v.Type().Field(i)
		if !sf.Anonymous {
			continue
		}
		ev := v.Field(i)
		if ev.Kind() == reflect.Pointer {
			if ev.IsNil() {
				continue
			}
			ev = ev.Elem()
		}
		if ev.Kind() == reflect.Struct {
			if fv, ok := fieldValue(ev, f); ok {
				return fv, true
			}
		}
	}
	return reflect.Value{}, false
}

// checkTag checks one value against its tag; "" when it is within. The
// message starts with what follows the field's path, and "%s" in it stands
// for the path.
func checkTag(v reflect.Value, tag string) string {
	if tag == "" {
		return ""
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	var r numRange
	for _, part := range strings.Split(tag, ",") {
		k, arg, _ := strings.Cut(strings.TrimSpace(part), "=")
		if msg := r.take(v, k, arg); msg != "" {
			return msg
		}
	}
	return r.check(v)
}

// numRange is what a tag says of a number: its bounds, and whether zero is
// allowed outside them.
type numRange struct {
	minimum, maximum *float64
	zero             bool
}

// take reads one part of a tag (k=arg): a bound is kept for check, a length
// or enum limit is checked at once and its message returned.
func (r *numRange) take(v reflect.Value, k, arg string) string {
	switch k {
	case "min", "max":
		n, err := strconv.ParseFloat(arg, 64)
		if err != nil {
			return ""
		}
		if k == "min" {
			r.minimum = &n
		} else {
			r.maximum = &n
		}
	case "zero":
		r.zero = true
	case "maxlen":
		n, _ := strconv.Atoi(arg)
		if v.Kind() == reflect.String && v.Len() > n {
			return fmt.Sprintf("is %d bytes, over the limit of %d: shorten %%s", v.Len(), n)
		}
	case "maxitems":
		n, _ := strconv.Atoi(arg)
		if (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) && v.Len() > n {
			return fmt.Sprintf("has %d items, over the limit of %d: split %%s", v.Len(), n)
		}
	case "enum":
		if v.Kind() == reflect.String && v.String() != "" && !contains(strings.Split(arg, "|"), v.String()) {
			return fmt.Sprintf("%q must be one of %s: set %%s to one of them", v.String(), strings.ReplaceAll(arg, "|", ", "))
		}
	}
	return ""
}

// check reports a number of v outside the range; anything else is within.
func (r numRange) check(v reflect.Value) string {
	n, ok := numberOf(v)
	if !ok {
		return ""
	}
	bits := 64
	if v.Kind() == reflect.Float32 {
		bits = 32
	}
	val := strconv.FormatFloat(n, 'f', -1, bits)
	switch {
	case r.zero && n == 0:
	case r.minimum != nil && r.maximum != nil && !r.zero && (n < *r.minimum || n > *r.maximum):
		return fmt.Sprintf("(%s) must be within [%s, %s]", val, fmtNumber(*r.minimum), fmtNumber(*r.maximum))
	case r.minimum != nil && n < *r.minimum:
		return fmt.Sprintf("(%s) must be at least %s: raise %%s", val, fmtNumber(*r.minimum))
	case r.maximum != nil && n > *r.maximum:
		return fmt.Sprintf("(%s) must be at most %s: lower %%s", val, fmtNumber(*r.maximum))
	}
	return ""
}

func numberOf(v reflect.Value) (float64, bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	}
	return 0, false
}

func fmtNumber(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
