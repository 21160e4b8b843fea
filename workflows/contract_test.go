package workflows

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/contract"
)

var updateSchemas = flag.Bool("update-schemas", false, "rewrite docs/schemas and the generated tables of docs/API.md from the Go types")

// published lists every JSON shape of the contract: workflow inputs,
// results, query results and the objects written to S3.
var published = []struct {
	file, title string
	t           reflect.Type
	dir         contract.Direction
}{
	{"documentqa.input", "memagent.DocumentQA input", reflect.TypeFor[api.DocumentQAInput](), contract.Input},
	{"documentqa.result", "memagent.DocumentQA result (and result.json)", reflect.TypeFor[DocumentQAResult](), contract.Output},
	{"documentqa.result-object", "result.json of DocumentQA and of each review question", reflect.TypeFor[activities.StoredResult](), contract.Output},
	{"documentqa.progress", "memagent.DocumentQA progress query", reflect.TypeFor[api.Progress](), contract.Output},
	{"review.input", "memagent.ReviewDocument input", reflect.TypeFor[api.ReviewInput](), contract.Input},
	{"review.result", "memagent.ReviewDocument result (and grid.json)", reflect.TypeFor[ReviewResult](), contract.Output},
	{"review.progress", "memagent.ReviewDocument progress query", reflect.TypeFor[api.ReviewProgress](), contract.Output},
	{"batch.input", "memagent.BatchQA input", reflect.TypeFor[api.BatchQAInput](), contract.Input},
	{"batch.result", "memagent.BatchQA result", reflect.TypeFor[api.BatchQAResult](), contract.Output},
	{"batch.progress", "memagent.BatchQA progress query", reflect.TypeFor[api.BatchProgress](), contract.Output},
	{"batch.report", "BatchQA report.json", reflect.TypeFor[api.BatchReport](), contract.Output},
	{"batch.results-line", "BatchQA results.jsonl line (also a manifest line)", reflect.TypeFor[api.BatchItemResult](), contract.Output},
	{"batch.changes", "BatchQA changes.json", reflect.TypeFor[api.ChangesReport](), contract.Output},
	{"batch.notification", "BatchQA notify_url POST body", reflect.TypeFor[api.ChangeNotification](), contract.Output},
	{"estimate.input", "memagent.Estimate input", reflect.TypeFor[api.EstimateInput](), contract.Input},
	{"estimate.result", "memagent.Estimate result", reflect.TypeFor[api.Estimate](), contract.Output},
	{"signoff.input", "memagent.SignOff input", reflect.TypeFor[api.SignOffInput](), contract.Input},
	{"signoff.grid", "memagent.SignOff result and grid query", reflect.TypeFor[api.SignOffGrid](), contract.Output},
	{"signoff.decide", "memagent.SignOff decide Update", reflect.TypeFor[api.DecideRequest](), contract.Input},
	{"signoff.sign-off", "memagent.SignOff sign-off Update", reflect.TypeFor[api.SignOffRequest](), contract.Input},
	{"signoff.reopen", "memagent.SignOff reopen Update", reflect.TypeFor[api.ReopenRequest](), contract.Input},
	{"signoff.cell-history", "memagent.SignOff cell-history query", reflect.TypeFor[api.SignOffCellHistory](), contract.Output},
	{"signoff.audit-line", "SignOff audit.jsonl line", reflect.TypeFor[api.SignOffEntry](), contract.Output},
	{"schedule.claim-input", "memagent.ClaimScheduleReports input", reflect.TypeFor[api.ClaimScheduleReportsInput](), contract.Input},
	{"validate.input", "memagent.Validate input", reflect.TypeFor[api.ValidateInput](), contract.Input},
	{"validate.report", "memagent.Validate result, report.json and the memagent.validation query", reflect.TypeFor[api.ValidationReport](), contract.Output},
	{"validate.decide", "memagent.Validate memagent.validation-decide Update", reflect.TypeFor[api.ValidationDecision](), contract.Input},
	{"validate.reveal", "memagent.Validate memagent.validation-reveal Update", reflect.TypeFor[api.ValidationReveal](), contract.Input},
	{"validate.finish", "memagent.Validate memagent.validation-finish Update", reflect.TypeFor[api.ValidationFinish](), contract.Input},
	{"validate.extend", "memagent.Validate memagent.validation-extend Update", reflect.TypeFor[api.ValidationExtend](), contract.Input},
}

func describer(t *testing.T) contract.Describer {
	t.Helper()
	d, err := contract.SourceDocs(map[string]string{
		"github.com/memagent/memagent/api":               "../api",
		"github.com/memagent/memagent/workflows":         ".",
		"github.com/memagent/memagent/activities":        "../activities",
		"github.com/memagent/memagent/internal/actwire":  "../internal/actwire",
		"github.com/memagent/memagent/internal/report":   "../internal/report",
		"github.com/memagent/memagent/internal/memagent": "../internal/memagent",
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSchemasMatchTypes fails when a Go type of the contract changed and
// docs/schemas was not regenerated: go test ./workflows -run Schemas -update-schemas.
func TestSchemasMatchTypes(t *testing.T) {
	d := describer(t)
	for _, p := range published {
		s := contract.Schema(p.t, "urn:memagent:schema:"+p.file, p.title, p.dir, d)
		got, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("..", "docs", "schemas", p.file+".json")
		if *updateSchemas {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v: run go test ./workflows -run Schemas -update-schemas", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s's Go type: run go test ./workflows -run Schemas -update-schemas, and review the change (it is the wire format)", path, p.t)
		}
	}
}

var generatedRE = regexp.MustCompile(`(?s)<!-- fields: ([a-z.\-]+) -->\n.*?<!-- end fields -->`)

// TestAPIFieldTablesMatchTypes keeps the field tables of docs/API.md in
// step with the types, like the schemas.
func TestAPIFieldTablesMatchTypes(t *testing.T) {
	d := describer(t)
	path := filepath.Join("..", "docs", "API.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string]int{}
	for i, p := range published {
		byFile[p.file] = i
	}
	var missing []string
	out := generatedRE.ReplaceAllFunc(doc, func(m []byte) []byte {
		name := string(generatedRE.FindSubmatch(m)[1])
		i, ok := byFile[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return []byte(fmt.Sprintf("<!-- fields: %s -->\n%s<!-- end fields -->", name, fieldTable(published[i].t, published[i].dir, d)))
	})
	if len(missing) > 0 {
		t.Fatalf("docs/API.md names unknown shapes %v", missing)
	}
	if *updateSchemas {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(out, doc) {
		t.Errorf("the field tables of docs/API.md differ from the Go types: run go test ./workflows -run APIFieldTables -update-schemas")
	}
}

// fieldTable renders t's members as a markdown table, nested objects
// flattened to dotted paths (two levels), arrays of objects as path[].
func fieldTable(t reflect.Type, dir contract.Direction, d contract.Describer) string {
	var b strings.Builder
	b.WriteString("| Field | Type | Meaning |\n|---|---|---|\n")
	var walk func(t reflect.Type, prefix string, depth int)
	walk = func(t reflect.Type, prefix string, depth int) {
		for _, f := range contract.Fields(t) {
			path := prefix + f.Name
			doc := d(f.Owner, f.GoName)
			if dir == contract.Input && f.Name == "state" {
				doc = "Set by the workflow when it continues as new; never send it."
			}
			for _, a := range f.Aliases {
				doc += fmt.Sprintf(" Alias: `%s`.", a)
			}
			if dir == contract.Input && strings.Contains(string(f.Owner.Field(fieldIndex(f)).Tag), `contract:"required`) {
				doc = "**Required.** " + doc
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", path, typeName(f.Type), strings.ReplaceAll(strings.TrimSpace(doc), "|", "\\|"))
			et := f.Type
			for et.Kind() == reflect.Pointer || et.Kind() == reflect.Slice {
				if et.Kind() == reflect.Slice {
					path += "[]"
				}
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && et.Name() != "Time" && depth < 1 && f.Name != "state" {
				walk(et, path+".", depth+1)
			}
		}
	}
	walk(t, "", 0)
	return b.String()
}

func fieldIndex(f contract.Field) int {
	sf, _ := f.Owner.FieldByName(f.GoName)
	return sf.Index[0]
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Slice:
		return "array of " + typeName(t.Elem())
	case reflect.Map:
		return "object of " + typeName(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Struct:
		if t.Name() == "Time" {
			return "string (RFC 3339 time)"
		}
		return "object"
	}
	if t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64 {
		return "integer"
	}
	return "any"
}

// TestValidateEnforcesTheSchemaRanges sets, in turn, every field of every
// input whose tag declares an upper bound (the schema's maximum, maxLength
// or maxItems) just past it, and checks that Validate, what the workflows
// and clients run, rejects it naming the field: the schemas and the
// checks are one source.
func TestValidateEnforcesTheSchemaRanges(t *testing.T) {
	bases := map[reflect.Type]func() any{
		reflect.TypeFor[api.DocumentQAInput](): func() any { return &api.DocumentQAInput{Document: "s3://b/d.txt", Question: "q?"} },
		reflect.TypeFor[api.ReviewInput](): func() any {
			return &api.ReviewInput{Document: "s3://b/d.txt", Questions: []api.ReviewQuestion{{Question: "q?"}}}
		},
		reflect.TypeFor[api.BatchQAInput](): func() any { return &api.BatchQAInput{Manifest: "s3://b/m.jsonl"} },
		reflect.TypeFor[api.EstimateInput](): func() any {
			return &api.EstimateInput{Document: "s3://b/d.txt", Questions: []string{"q?"}}
		},
		reflect.TypeFor[api.SignOffInput](): func() any { return &api.SignOffInput{Review: "memagent-review-1"} },
		reflect.TypeFor[api.ClaimScheduleReportsInput](): func() any {
			return &api.ClaimScheduleReportsInput{ScheduleID: "nightly", ReportPrefix: "s3://b/reports/nightly/"}
		},
		reflect.TypeFor[api.DecideRequest](): func() any {
			return &api.DecideRequest{Cell: "q1", Level: 1, Decision: api.DecisionAccepted, Reviewer: "alice", ClientIdentity: "c"}
		},
		reflect.TypeFor[api.SignOffRequest](): func() any {
			return &api.SignOffRequest{Level: 1, Reviewer: "alice", ClientIdentity: "c"}
		},
		reflect.TypeFor[api.ValidateInput](): func() any {
			return &api.ValidateInput{Batch: "b", Thresholds: []api.ValidationThreshold{{Figure: api.FigureRecall, Op: ">=", Value: 0.75}}}
		},
		reflect.TypeFor[api.ValidationDecision](): func() any {
			return &api.ValidationDecision{Cell: "1", Verdict: api.VerdictRight, Reviewer: "alice", ClientIdentity: "c"}
		},
		reflect.TypeFor[api.ValidationReveal](): func() any {
			return &api.ValidationReveal{Cell: "1", Reviewer: "alice", ClientIdentity: "c"}
		},
		reflect.TypeFor[api.ValidationFinish](): func() any {
			return &api.ValidationFinish{Reviewer: "alice", ClientIdentity: "c"}
		},
		reflect.TypeFor[api.ValidationExtend](): func() any {
			return &api.ValidationExtend{SampleSize: 10, Reviewer: "alice", ClientIdentity: "c"}
		},
		reflect.TypeFor[api.ReopenRequest](): func() any {
			return &api.ReopenRequest{Cell: "q1", Level: 1, Reason: "r", Reviewer: "alice", ClientIdentity: "c"}
		},
	}
	checked := 0
	for _, p := range published {
		if p.dir != contract.Input {
			continue
		}
		base, ok := bases[p.t]
		if !ok {
			t.Fatalf("no valid base input for %s", p.t)
		}
		var walk func(t reflect.Type, path []string, jsonPath string)
		walk = func(st reflect.Type, path []string, jsonPath string) {
			for _, f := range contract.Fields(st) {
				sf, _ := f.Owner.FieldByName(f.GoName)
				jp := strings.TrimPrefix(jsonPath+"."+f.Name, ".")
				ft := f.Type
				elem := ft
				for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice {
					elem = elem.Elem()
				}
				if elem.Kind() == reflect.Struct && elem.PkgPath() != "time" {
					sub := jp
					if ft.Kind() == reflect.Slice {
						sub += "[0]"
					}
					walk(elem, append(append([]string{}, path...), f.GoName), sub)
				}
				for _, part := range strings.Split(sf.Tag.Get("contract"), ",") {
					k, v, _ := strings.Cut(part, "=")
					if k != "max" && k != "maxlen" && k != "maxitems" {
						continue
					}
					limit, _ := strconv.ParseFloat(v, 64)
					in := base()
					if !setPast(reflect.ValueOf(in).Elem(), append(append([]string{}, path...), f.GoName), k, limit) {
						t.Errorf("%s.%s: could not set it past %s=%s", p.t.Name(), jp, k, v)
						continue
					}
					err := in.(interface{ Validate() error }).Validate()
					if err == nil || !strings.Contains(err.Error(), jp) {
						t.Errorf("%s with %s past %s=%s: Validate() = %v, want an error naming it", p.t.Name(), jp, k, v, err)
					}
					checked++
				}
			}
		}
		walk(p.t, nil, "")
	}
	if checked < 20 {
		t.Errorf("only %d bounds checked", checked)
	}
}

// setPast sets the field at path (Go names; a slice's first element) just
// past its bound.
func setPast(v reflect.Value, path []string, kind string, limit float64) bool {
	for i, name := range path {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if v.Kind() == reflect.Slice {
			if v.Len() == 0 {
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			}
			v = v.Index(0)
		}
		v = v.FieldByName(name)
		if !v.IsValid() {
			return false
		}
		if i < len(path)-1 {
			continue
		}
		if v.Kind() == reflect.Pointer {
			v.Set(reflect.New(v.Type().Elem()))
			v = v.Elem()
		}
		switch {
		case kind == "maxlen" && v.Kind() == reflect.String:
			v.SetString(strings.Repeat("a", int(limit)+1))
		case kind == "maxitems" && v.Kind() == reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), int(limit)+1, int(limit)+1))
		case kind == "max" && v.CanInt():
			v.SetInt(int64(limit) + 1)
		case kind == "max" && v.CanFloat():
			v.SetFloat(limit + 1)
		default:
			return false
		}
	}
	return true
}
