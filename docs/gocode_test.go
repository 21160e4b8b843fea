package docs_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "copy the Example bodies into the Markdown Go blocks that name them")

// goExampleMarker, on the line before a ```go fence, names the Example
// function whose body the block is: "<!-- go-example: DIR NAME -->", DIR a
// package directory relative to the repository's root.
var goExampleMarker = regexp.MustCompile(`^<!-- go-example: (\S+) (Example\w*) -->$`)

// goBlock is one ```go block of a Markdown file.
type goBlock struct {
	file string // relative to the repository's root, as errors name it
	line int    // of the fence
	dir  string // of the Example, "" when unmarked
	name string // of the Example
	code string
}

// goBlocks returns the ```go blocks of the Markdown file at root/file.
func goBlocks(root, file string) ([]goBlock, error) {
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []goBlock
		cur    *goBlock
		prev   string
		n      int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		case strings.TrimSpace(line) == "```go":
			cur = &goBlock{file: file, line: n}
			if m := goExampleMarker.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.dir, cur.name = m[1], m[2]
			}
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a ```go block is not closed", file, cur.line)
	}
	return blocks, nil
}

// example is an Example function's body and the imports of its file.
type example struct {
	pos     string // file:line of the function
	body    string // dedented by one tab, as a Markdown block shows it
	imports []*ast.ImportSpec
}

// findExample parses the test files of root/dir for the function name.
func findExample(root, dir, name string) (example, error) {
	files, err := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
	if err != nil {
		return example{}, err
	}
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			return example{}, err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments)
		if err != nil {
			return example{}, err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != name || fn.Body == nil {
				continue
			}
			// The lines strictly between the braces.
			open := fset.Position(fn.Body.Lbrace).Offset
			closing := fset.Position(fn.Body.Rbrace).Offset
			inner := src[open+1 : closing]
			inner = inner[bytes.IndexByte(inner, '\n')+1:]
			var body strings.Builder
			for _, l := range strings.SplitAfter(string(inner), "\n") {
				body.WriteString(strings.TrimPrefix(l, "\t"))
			}
			rel, _ := filepath.Rel(root, p)
			return example{pos: fmt.Sprintf("%s:%d", rel, fset.Position(fn.Pos()).Line), body: body.String(), imports: f.Imports}, nil
		}
	}
	return example{}, fmt.Errorf("no func %s in %s/*_test.go", name, dir)
}

// TestGoBlocks keeps the Go blocks of the README and docs/*.md true: each
// is the body of an Example function, which `go test` compiles (and runs
// when it has an Output comment), copied here with -update; and each
// builds as shown, with only its Example file's imports, in a package
// generated inside the module: one `go build` for all of them, whose
// errors name the Markdown file and line.
func TestGoBlocks(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}

	gen, err := os.MkdirTemp(filepath.Join(root, "docs"), "_gocode-") // "_": no ./... pattern matches it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(gen) })
	total, built := 0, 0
	for _, file := range files {
		blocks, err := goBlocks(root, file)
		if err != nil {
			t.Fatal(err)
		}
		total += len(blocks)
		rewrites := map[int]string{} // fence line → code
		for _, b := range blocks {
			if b.name == "" {
				t.Errorf("%s:%d: a ```go block must be the body of an Example function that go test compiles: "+
					"write it in a package's example_test.go and put <!-- go-example: DIR ExampleName --> on the line before the fence", b.file, b.line)
				continue
			}
			ex, err := findExample(root, b.dir, b.name)
			if err != nil {
				t.Errorf("%s:%d: %v", b.file, b.line, err)
				continue
			}
			if b.code != ex.body {
				if *update {
					rewrites[b.line] = ex.body
				} else {
					t.Errorf("%s:%d: the block is not the body of %s (%s): go test ./docs -run TestGoBlocks -update copies it\n--- block\n%s--- %s\n%s",
						b.file, b.line, b.name, ex.pos, b.code, b.name, ex.body)
				}
			}
			built++
			if err := writeBlockPackage(gen, built, b, ex); err != nil {
				t.Fatal(err)
			}
		}
		if len(rewrites) > 0 {
			if err := rewriteBlocks(filepath.Join(root, file), rewrites); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: copied %d Example bodies", file, len(rewrites))
		}
	}
	if total == 0 {
		t.Fatal("found no ```go block in README.md or docs/*.md: the parser is broken")
	}
	if built == 0 {
		return
	}
	// Each package by its path: a pattern with "..." matches nothing
	// under a directory whose name starts with "_", and says so with exit 0.
	rel, _ := filepath.Rel(root, gen)
	args := []string{"build"}
	for i := 1; i <= built; i++ {
		args = append(args, fmt.Sprintf("./%s/block%d", filepath.ToSlash(rel), i))
	}
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the Go blocks do not build as shown (%v):\n%s", err, out)
		return
	}
	t.Logf("%d Go blocks built", built)
}

// majorVersion is the last element of a module path at v2 and above.
var majorVersion = regexp.MustCompile(`^v\d+$`)

// writeBlockPackage writes b as a package of its own under gen: its code
// (with -update, the Example's body it now holds) in a function, after a
// //line directive naming the Markdown file, with the imports of its
// Example's file that it uses.
func writeBlockPackage(gen string, seq int, b goBlock, ex example) error {
	code := b.code
	if *update {
		code = ex.body // what the block now holds
	}
	used, err := selectorRoots(code)
	if err != nil {
		return fmt.Errorf("%s:%d: %w", b.file, b.line, err)
	}
	var src strings.Builder
	fmt.Fprintf(&src, "package block%d\n\nimport (\n", seq)
	for _, spec := range ex.imports {
		p, _ := strconv.Unquote(spec.Path.Value)
		name := path.Base(p)
		if majorVersion.MatchString(name) {
			name = path.Base(path.Dir(p))
		}
		if spec.Name != nil {
			name = spec.Name.Name
		}
		if used[name] {
			fmt.Fprintf(&src, "\t%s %s\n", name, spec.Path.Value)
		}
	}
	fmt.Fprintf(&src, ")\n\nfunc block() {\n//line %s:%d\n%s}\n", filepath.ToSlash(b.file), b.line+1, code)
	dir := filepath.Join(gen, fmt.Sprintf("block%d", seq))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "block.go"), []byte(src.String()), 0o644)
}

// selectorRoots returns the identifiers code selects from (x in x.Y): the
// package names it may use.
func selectorRoots(code string) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+code+"}\n", 0)
	if err != nil {
		return nil, err
	}
	roots := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok {
				roots[id.Name] = true
			}
		}
		return true
	})
	return roots, nil
}

// rewriteBlocks replaces the code of the ```go blocks fenced at the given
// lines of the Markdown file at p.
func rewriteBlocks(p string, code map[int]string) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(data), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); i++ {
		out.WriteString(lines[i])
		c, ok := code[i+1]
		if !ok {
			continue
		}
		out.WriteString(c)
		for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "```" {
			i++
		}
	}
	return os.WriteFile(p, []byte(out.String()), 0o644)
}
