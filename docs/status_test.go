package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stageConst is the name of a MemagentStatus value in package api.
var stageConst = regexp.MustCompile(`^(Batch)?Stage[A-Z]\w*$`)

// codeStatuses returns the values of package api's Stage* and BatchStage*
// constants: every MemagentStatus a workflow may set.
func codeStatuses(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, filepath.Join("..", "api"), func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{} // constant → its string, or the constant it names
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if !stageConst.MatchString(name.Name) || i >= len(vs.Values) {
							continue
						}
						switch v := vs.Values[i].(type) {
						case *ast.BasicLit:
							s, err := strconv.Unquote(v.Value)
							if err != nil {
								t.Fatalf("api.%s: %v", name.Name, err)
							}
							values[name.Name] = s
						case *ast.Ident:
							values[name.Name] = "=" + v.Name
						default:
							t.Fatalf("api.%s: a status must be a string literal or another status", name.Name)
						}
					}
				}
			}
		}
	}
	set := map[string]bool{}
	for name, v := range values {
		for strings.HasPrefix(v, "=") {
			next, ok := values[v[1:]]
			if !ok {
				t.Fatalf("api.%s names %s, which is not a status", name, v[1:])
			}
			v = next
		}
		set[v] = true
	}
	if len(set) < 10 {
		t.Fatalf("found %d statuses in package api (%v): the parser is broken", len(set), slices.Sorted(maps.Keys(set)))
	}
	return set
}

// statusTable returns docs/API.md's table of MemagentStatus values: for
// each value, the Workflows cell of its row.
func statusTable(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("API.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "## Status: the `MemagentStatus` search attribute")
	if !ok {
		t.Fatal("API.md has no section on MemagentStatus")
	}
	table := map[string]string{}
	inTable := false
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") {
			continue // the header and its rule
		}
		for _, v := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			table[v[1]] = strings.TrimSpace(cells[2])
		}
	}
	return table
}

// markedList returns the values a Markdown list between "<!-- NAME -->"
// and "<!-- end NAME -->" names, one an item: "- `value`: what it means".
func markedList(t *testing.T, path, name string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "<!-- "+name+" -->")
	end := strings.Index(text, "<!-- end "+name+" -->")
	if start < 0 || end < start {
		t.Fatalf("%s has no list between <!-- %s --> and <!-- end %s -->", path, name, name)
	}
	item := regexp.MustCompile("^\\s*- `([^`]+)`: ")
	var values []string
	for _, line := range strings.Split(text[start:end], "\n") {
		if m := item.FindStringSubmatch(line); m != nil {
			values = append(values, m[1])
		}
	}
	return values
}

// sameSet reports the values one list has and the other lacks.
func sameSet(t *testing.T, what string, got []string, want map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, v := range got {
		if seen[v] {
			t.Errorf("%s lists %q twice", what, v)
		}
		seen[v] = true
		if !want[v] {
			t.Errorf("%s lists %q, which is not a status the code sets", what, v)
		}
	}
	for _, v := range slices.Sorted(maps.Keys(want)) {
		if !seen[v] {
			t.Errorf("%s omits %q", what, v)
		}
	}
}

// TestStatusListsMatchCode keeps every list of MemagentStatus values true:
// docs/API.md's table and the README's list name exactly the values of
// package api's Stage constants, and docs/BATCH.md's list exactly those
// the table gives BatchQA ("BatchQA" or "all").
func TestStatusListsMatchCode(t *testing.T) {
	code := codeStatuses(t)
	table := statusTable(t)
	sameSet(t, "docs/API.md's status table", slices.Collect(maps.Keys(table)), code)
	sameSet(t, "README.md's status list", markedList(t, filepath.Join("..", "README.md"), "status values"), code)

	batch := map[string]bool{}
	for v, workflows := range table {
		if workflows == "all" || strings.Contains(workflows, "BatchQA") {
			batch[v] = true
		}
	}
	sameSet(t, "docs/BATCH.md's status list", markedList(t, "BATCH.md", "batch status values"), batch)
}

// TestChunkCountIntervalMatchesCode: the README says how often a run
// upserts its chunk count, and that is workflows' quietProgressUpsertEvery
// (a new run's; progressUpsertEvery is an older run's).
func TestChunkCountIntervalMatchesCode(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "workflows", "documentqa.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const quietProgressUpsertEvery = (\d+) \* time\.Second`).FindSubmatch(src)
	if m == nil {
		t.Fatal("workflows/documentqa.go has no `const quietProgressUpsertEvery = N * time.Second`: update this test with it")
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`MemagentChunksDone` | Int | chunks read: upserted at most once every " + string(m[1]) + " s",
		"the chunk count at most once every " + string(m[1]) + " s"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not say %q (quietProgressUpsertEvery is %s s)", want, m[1])
		}
	}
}

// measuredFirstBuild is what `go run ./devstack demo` took to its answer
// on a fresh 2-core machine, module downloads included (issue 52).
const measuredFirstBuild = 6*time.Minute + 34*time.Second

// TestFirstBuildFigure: the README's figure for the first build is no less
// than what one measured, and cites the measurement.
func TestFirstBuildFigure(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ")
	m := regexp.MustCompile(`The first build [^.]*?about (\d+) minutes on 2 cores`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README.md has no sentence `The first build … about N minutes on 2 cores`: update this test with it")
	}
	n, _ := strconv.Atoi(m[1])
	if time.Duration(n)*time.Minute < measuredFirstBuild {
		t.Errorf("README.md says the first build takes about %d minutes; a fresh machine took %s", n, measuredFirstBuild)
	}
	cited := fmt.Sprintf("took %d min %d s", int(measuredFirstBuild.Minutes()), int(measuredFirstBuild.Seconds())%60)
	if !strings.Contains(text, cited) {
		t.Errorf("README.md does not cite the measured first build: %q", cited)
	}
}
