package workflows_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// versionsFile is the table of the package's version changes.
const versionsFile = "VERSIONS.md"

// versionRow is one row of the table of changes in VERSIONS.md.
type versionRow struct {
	line                int
	id, constant, since string
	gates, runs         string
	recorded            []string // generation prefixes; none when empty
}

// TestVersions holds VERSIONS.md to the code and the recorded histories:
// every exported *Change constant of the package has a row with its id,
// every row names one, and every generation a row names has a history
// that records the change at version 1; every generation under testdata/
// is listed, and every listed one exists.
func TestVersions(t *testing.T) {
	consts := changeConstants(t)
	if len(consts) == 0 {
		t.Fatal("found no *Change constants in the package: the scan is broken")
	}
	rows, gens := readVersions(t)
	if len(rows) == 0 {
		t.Fatalf("%s: no rows in the table of changes", versionsFile)
	}
	markers := map[string]map[string]bool{} // generation -> change ids recorded at version 1
	seen := map[string]bool{}
	for _, r := range rows {
		switch id, ok := consts[r.constant]; {
		case !ok:
			t.Errorf("%s:%d: %s is not a *Change constant of the package", versionsFile, r.line, r.constant)
		case id != r.id:
			t.Errorf("%s:%d: %s is %q in the code, %q in the table", versionsFile, r.line, r.constant, id, r.id)
		}
		if seen[r.constant] {
			t.Errorf("%s:%d: a second row for %s", versionsFile, r.line, r.constant)
		}
		seen[r.constant] = true
		if !regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`).MatchString(r.since) || r.gates == "" || r.runs == "" {
			t.Errorf("%s:%d: row %q: want a date (YYYY-MM-DD), what it gates and whether new runs take it", versionsFile, r.line, r.id)
		}
		for _, g := range r.recorded {
			if markers[g] == nil {
				markers[g] = recordedChanges(t, g)
			}
			if !markers[g][r.id] {
				t.Errorf("%s:%d: no history %s/%s{N}.json records %q at version 1", versionsFile, r.line, historyDir, g, r.id)
			}
		}
	}
	for name := range consts {
		if !seen[name] {
			t.Errorf("%s has no row for %s (%q)", versionsFile, name, consts[name])
		}
	}

	onDisk := generationsOnDisk(t)
	for _, g := range gens {
		if !onDisk[g] {
			t.Errorf("%s lists generation %s, which has no %s/%s{N}.json", versionsFile, g, historyDir, g)
		}
	}
	for g := range onDisk {
		if !slices.Contains(gens, g) {
			t.Errorf("%s/%s{N}.json is not listed under Generations in %s", historyDir, g, versionsFile)
		}
	}
}

// changeConstants returns the exported constants named *Change in the
// package's non-test files, with their string values.
func changeConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !name.IsExported() || !strings.HasSuffix(name.Name, "Change") {
						continue
					}
					lit, ok := valueAt(vs, i).(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: %s is not a string literal: give the change id as one", fset.Position(name.Pos()), name.Name)
						continue
					}
					id, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[name.Name] = id
				}
			}
		}
	}
	return out
}

func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}

// readVersions parses VERSIONS.md: the rows of the table of changes, and
// the generations its Generations table lists.
func readVersions(t *testing.T) ([]versionRow, []string) {
	t.Helper()
	data, err := os.ReadFile(versionsFile)
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile("`([^`]+)`")
	unquote := func(cell string) string {
		if m := code.FindStringSubmatch(cell); m != nil {
			return m[1]
		}
		return cell
	}
	var rows []versionRow
	var gens []string
	inGenerations := false
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## Generations") {
			inGenerations = true
		}
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|--") || strings.HasPrefix(line, "| id ") || strings.HasPrefix(line, "| workflow ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if inGenerations {
			if len(cells) != 3 {
				t.Fatalf("%s:%d: %d cells, want 3 (workflow, generations, replayed by)", versionsFile, i+1, len(cells))
			}
			for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
				gens = append(gens, m[1])
			}
			continue
		}
		if len(cells) != 6 {
			t.Fatalf("%s:%d: %d cells, want 6 (id, constant, since, gates, recorded in, new runs)", versionsFile, i+1, len(cells))
		}
		r := versionRow{line: i + 1, id: unquote(cells[0]), constant: unquote(cells[1]), since: cells[2], gates: cells[3], runs: cells[5]}
		if cells[4] != "none" {
			for _, m := range code.FindAllStringSubmatch(cells[4], -1) {
				r.recorded = append(r.recorded, m[1])
			}
			if len(r.recorded) == 0 {
				t.Errorf("%s:%d: recorded in %q: want `generation` names or none", versionsFile, i+1, cells[4])
			}
		}
		rows = append(rows, r)
	}
	return rows, gens
}

// recordedChanges returns the change ids that the histories of generation
// g record at version 1, failing when g has no history.
func recordedChanges(t *testing.T, g string) map[string]bool {
	t.Helper()
	files := historyFiles(t, generation{prefix: g})
	if len(files) == 0 {
		t.Errorf("no %s/%s{N}.json", historyDir, g)
	}
	type payloads struct {
		Payloads []struct {
			Data []byte `json:"data"`
		} `json:"payloads"`
	}
	type history struct {
		Events []struct {
			Marker *struct {
				Name    string              `json:"markerName"`
				Details map[string]payloads `json:"details"`
			} `json:"markerRecordedEventAttributes"`
		} `json:"events"`
	}
	out := map[string]bool{}
	for _, path := range files {
		var hist history
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &hist); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, e := range hist.Events {
			if e.Marker == nil || e.Marker.Name != "Version" {
				continue
			}
			var id string
			var v int
			idp, vp := e.Marker.Details["change-id"].Payloads, e.Marker.Details["version"].Payloads
			if len(idp) != 1 || len(vp) != 1 || json.Unmarshal(idp[0].Data, &id) != nil || json.Unmarshal(vp[0].Data, &v) != nil {
				t.Fatalf("%s: a Version marker without a change id and version", path)
			}
			if v == 1 {
				out[id] = true
			}
		}
	}
	return out
}

// generationsOnDisk returns the generation prefixes of the histories
// under testdata/.
func generationsOnDisk(t *testing.T) map[string]bool {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(historyDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	run := regexp.MustCompile(`^(.+_run)\d+\.json$`)
	out := map[string]bool{}
	for _, p := range paths {
		m := run.FindStringSubmatch(filepath.Base(p))
		if m == nil {
			t.Errorf("%s is not named <generation>_run{N}.json", p)
			continue
		}
		out[m[1]] = true
	}
	return out
}
