package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// repoTests indexes the repository's test files: which package directory
// has which functions `go test -run` selects from.
type repoTests struct {
	funcs map[string][]string // package dir (slash-separated, relative to the root) → Test, Fuzz and Example names
	files map[string][]string // base name of a _test.go file → its paths relative to the root
}

// skipDir reports whether the walk over the repository leaves out the
// directory: what go test leaves out (testdata, "_" and "." names) and
// installed npm modules.
func skipDir(name string) bool {
	return name == "testdata" || name == "node_modules" || strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".")
}

// walkRepo calls fn with the path, relative to root and slash-separated, of
// every file the repository's docs checks look at.
func walkRepo(root string, fn func(rel string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel))
	})
}

// indexTests parses every _test.go file under root for its top-level
// functions whose names `go test -run` matches against.
func indexTests(root string) (repoTests, error) {
	idx := repoTests{funcs: map[string][]string{}, files: map[string][]string{}}
	err := walkRepo(root, func(rel string) error {
		base := filepath.Base(rel)
		if !strings.HasSuffix(base, "_test.go") {
			return nil
		}
		idx.files[base] = append(idx.files[base], rel)
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if _, ok := idx.funcs[dir]; !ok {
			idx.funcs[dir] = nil // a package with test files, perhaps no Test function
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			n := fn.Name.Name
			if strings.HasPrefix(n, "Test") || strings.HasPrefix(n, "Fuzz") || strings.HasPrefix(n, "Example") {
				idx.funcs[dir] = append(idx.funcs[dir], n)
			}
		}
		return nil
	})
	return idx, err
}

// markdownFiles returns the repository's Markdown files, relative to root.
func markdownFiles(root string) ([]string, error) {
	var files []string
	err := walkRepo(root, func(rel string) error {
		if strings.HasSuffix(rel, ".md") {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// goTestCmd is one `go test` command a Markdown file names.
type goTestCmd struct {
	line int
	text string   // as written, for messages
	args []string // after "go test", unquoted
}

// goTestValueFlags are go test's flags (its own, the build's and the test
// binary's) that take a value as the next argument.
var goTestValueFlags = map[string]bool{
	"run": true, "skip": true, "bench": true, "benchtime": true, "count": true, "cpu": true,
	"timeout": true, "fuzz": true, "fuzztime": true, "fuzzminimizetime": true, "parallel": true,
	"p": true, "tags": true, "o": true, "exec": true, "list": true, "shuffle": true, "coverprofile": true,
	"covermode": true, "coverpkg": true, "cpuprofile": true, "memprofile": true, "blockprofile": true,
	"mutexprofile": true, "trace": true, "outputdir": true, "ldflags": true, "gcflags": true,
	"mod": true, "modfile": true, "vet": true, "C": true,
}

// goTestCmds returns the `go test` commands of a Markdown file's text, in
// prose (a code span may go on over a line break) and in fenced blocks (a
// line break ends one unless escaped with a backslash).
func goTestCmds(text string) []goTestCmd {
	// Which offsets are inside a fenced block.
	inFence := make([]bool, len(text)+1)
	fence := false
	for off := 0; off < len(text); {
		end := strings.IndexByte(text[off:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += off + 1
		}
		l := strings.TrimSpace(text[off:end])
		opens := strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~")
		for i := off; i < end; i++ {
			inFence[i] = fence && !opens
		}
		if opens {
			fence = !fence
		}
		off = end
	}
	var cmds []goTestCmd
	for off := 0; ; {
		i := strings.Index(text[off:], "go test")
		if i < 0 {
			break
		}
		start := off + i
		off = start + len("go test")
		if start > 0 && !strings.ContainsRune(" \t\n`(;|&=", rune(text[start-1])) {
			continue // "ago test" and the like
		}
		args, end := shellWords(text, off, inFence)
		cmds = append(cmds, goTestCmd{
			line: strings.Count(text[:start], "\n") + 1,
			text: strings.Join(strings.Fields(text[start:end]), " "),
			args: args,
		})
	}
	return cmds
}

// shellWords reads the words of a command from text[off:] up to its end: a
// backtick, a shell operator or comment, a line break in a fenced block, a
// blank line in prose. Quotes are removed, and in prose `\|` (a pipe in a
// Markdown table) is a pipe.
func shellWords(text string, off int, inFence []bool) ([]string, int) {
	var words []string
	i := off
	for i < len(text) {
		c := text[i]
		switch {
		case c == ' ' || c == '\t':
			i++
			continue
		case c == '\\' && i+1 < len(text) && text[i+1] == '\n':
			i += 2
			continue
		case c == '\n':
			if inFence[i] || strings.HasPrefix(strings.TrimLeft(text[i+1:], " \t"), "\n") {
				return words, i
			}
			i++
			continue
		case strings.IndexByte("`;|&)#<>", c) >= 0:
			return words, i
		}
		var w strings.Builder
		for i < len(text) && strings.IndexByte(" \t\n`;|&)<>", text[i]) < 0 {
			if q := text[i]; q == '\'' || q == '"' {
				j := strings.IndexByte(text[i+1:], q)
				if j < 0 {
					j = len(text) - i - 1
				}
				quoted := text[i+1 : i+1+j]
				if !inFence[i] {
					quoted = strings.ReplaceAll(quoted, `\|`, "|")
				}
				w.WriteString(quoted)
				i += j + 2
				continue
			}
			w.WriteByte(text[i])
			i++
		}
		words = append(words, w.String())
	}
	return words, min(i, len(text))
}

// parseGoTest returns the packages (as written) and the -run pattern of
// a `go test` command's arguments.
func parseGoTest(args []string) (pkgs []string, run string, hasRun bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !hasVal && goTestValueFlags[name] && i+1 < len(args) {
				i++
				val, hasVal = args[i], true
			}
			if name == "run" && hasVal {
				run, hasRun = val, true
			}
			continue
		}
		if a == "." || strings.HasPrefix(a, "./") {
			pkgs = append(pkgs, a)
		}
	}
	return pkgs, run, hasRun
}

// topLevel is the part of a -run pattern go test matches against top-level
// names: up to the first slash outside brackets.
func topLevel(pattern string) string {
	depth := 0
	for i, c := range pattern {
		switch c {
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case '/':
			if depth == 0 {
				return pattern[:i]
			}
		}
	}
	return pattern
}

// matching returns the names that re matches.
func matching(re *regexp.Regexp, names []string) []string {
	var m []string
	for _, n := range names {
		if re.MatchString(n) {
			m = append(m, n)
		}
	}
	return m
}

// pkgDir resolves a package argument, as written in the Markdown file md,
// to a package directory with test files: relative to the repository's
// root (how the docs write them), else to md's directory.
func pkgDir(idx repoTests, root, md, pkg string) (dir string, hasTests, exists bool) {
	for _, base := range []string{".", filepath.ToSlash(filepath.Dir(md))} {
		d := filepath.ToSlash(filepath.Clean(filepath.Join(base, pkg)))
		if _, ok := idx.funcs[d]; ok {
			return d, true, true
		}
		if st, err := os.Stat(filepath.Join(root, d)); err == nil && st.IsDir() && !exists {
			dir, exists = d, true
		}
	}
	if !exists {
		dir = filepath.ToSlash(filepath.Clean(pkg))
	}
	return dir, false, exists
}

// whereMatched names the packages in which re matches a test, for a fix.
func whereMatched(idx repoTests, re *regexp.Regexp) []string {
	var dirs []string
	for d, names := range idx.funcs {
		if len(matching(re, names)) > 0 {
			dirs = append(dirs, "./"+d)
		}
	}
	sort.Strings(dirs)
	return dirs
}

// checkGoTest returns what is wrong with a `go test` command a Markdown
// file names: a package without tests, or a -run pattern no test of the
// package matches.
func checkGoTest(idx repoTests, root, md string, c goTestCmd) []string {
	pkgs, run, hasRun := parseGoTest(c.args)
	if len(pkgs) == 0 || slices.ContainsFunc(pkgs, func(p string) bool { return strings.HasSuffix(p, "...") }) {
		return nil // the current directory, or ./...: nothing to say
	}
	var re *regexp.Regexp
	if hasRun && run != "^$" {
		var err error
		if re, err = regexp.Compile(topLevel(run)); err != nil {
			return []string{fmt.Sprintf("%s:%d: `%s`: -run %q is not a Go regexp (%v): fix the pattern", md, c.line, c.text, run, err)}
		}
	}
	var problems []string
	for _, p := range pkgs {
		dir, hasTests, exists := pkgDir(idx, root, md, p)
		fix := ""
		if re != nil {
			switch where := whereMatched(idx, re); len(where) {
			case 0:
			case 1:
				fix = fmt.Sprintf("; the tests -run %s selects are in %s: write `%s`", run, where[0], replaceWord(c.text, p, where[0]))
			default:
				fix = fmt.Sprintf("; the tests -run %s selects are in %s: name the one meant", run, strings.Join(where, ", "))
			}
		}
		switch {
		case !exists:
			problems = append(problems, fmt.Sprintf("%s:%d: `%s`: there is no package %s%s", md, c.line, c.text, p, orDefault(fix, "; name the package the test is in")))
		case !hasTests:
			problems = append(problems, fmt.Sprintf("%s:%d: `%s` runs no test (go test says \"no test files\" and exits 0): ./%s has no _test.go file%s",
				md, c.line, c.text, dir, orDefault(fix, "; name the package the test is in")))
		case re != nil && len(matching(re, idx.funcs[dir])) == 0:
			problems = append(problems, fmt.Sprintf("%s:%d: `%s` runs no test (go test says \"no tests to run\" and exits 0): -run %s matches no Test, Fuzz or Example function of ./%s%s",
				md, c.line, c.text, run, dir, orDefault(fix, "; no test in the repository matches it either: name the test as it is now")))
		}
	}
	return problems
}

// replaceWord replaces the word old of the command cmd with new.
func replaceWord(cmd, old, new string) string {
	w := strings.Fields(cmd)
	for i := range w {
		if w[i] == old {
			w[i] = new
		}
	}
	return strings.Join(w, " ")
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// testFilePath is a path to a Go test file named in prose or code.
var testFilePath = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9]_test\.go\b`)

// checkTestFiles returns the paths ending in _test.go that a Markdown
// file names and that do not exist: relative to the repository's root or
// to the file's own directory, and a bare name anywhere in the repository.
func checkTestFiles(idx repoTests, root, md, text string) []string {
	var problems []string
	for _, loc := range testFilePath.FindAllStringIndex(text, -1) {
		p := text[loc[0]:loc[1]]
		if strings.HasPrefix(p, "/") || strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "./") {
			continue // absolute, or the tail of a URL or of a "..." path
		}
		base := filepath.Base(p)
		if !strings.Contains(p, "/") && len(idx.files[base]) > 0 {
			continue
		}
		found := false
		for _, dir := range []string{root, filepath.Join(root, filepath.Dir(md))} {
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
				found = true
				break
			}
		}
		if found {
			continue
		}
		fix := "name the file the test is in now"
		if have := idx.files[base]; len(have) == 1 {
			fix = "write " + have[0]
		} else if len(have) > 1 {
			fix = "name the one meant of " + strings.Join(have, ", ")
		}
		problems = append(problems, fmt.Sprintf("%s:%d: %s does not exist: %s", md, strings.Count(text[:loc[0]], "\n")+1, p, fix))
	}
	return problems
}

// repoIndex returns the repository's root and its tests' index.
func repoIndex(t *testing.T) (string, repoTests) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := indexTests(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, idx
}

// TestDocsNameRealTests keeps the test commands and test files the
// Markdown files of the repository name true: `go test ./PKG -run PATTERN`
// must name a package with tests and a pattern that selects at least one
// of them (go test says "no test files" or "no tests to run" and exits 0
// otherwise, so a stale command passes unnoticed), and a path ending in
// _test.go must exist.
func TestDocsNameRealTests(t *testing.T) {
	root, idx := repoIndex(t)
	files, err := markdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "README.md") || !slices.Contains(files, "docs/API.md") {
		t.Fatalf("the walk found %v, without README.md or docs/API.md: it is broken", files)
	}
	commands, checked := 0, 0
	for _, md := range files {
		data, err := os.ReadFile(filepath.Join(root, md))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, c := range goTestCmds(text) {
			commands++
			if pkgs, _, _ := parseGoTest(c.args); len(pkgs) > 0 {
				checked++
			}
			for _, p := range checkGoTest(idx, root, md, c) {
				t.Error(p)
			}
		}
		for _, p := range checkTestFiles(idx, root, md, text) {
			t.Error(p)
		}
	}
	if checked == 0 {
		t.Fatalf("found %d go test commands and none with a package in %d Markdown files: the parser is broken", commands, len(files))
	}
	t.Logf("%d Markdown files, %d go test commands, %d with packages", len(files), commands, checked)
}

// TestGoTestCmdParsing pins how commands are read from Markdown: quotes,
// code spans over a line break, fenced lines, subtest patterns.
func TestGoTestCmdParsing(t *testing.T) {
	tests := []struct {
		name, text string
		pkgs       []string
		run        string
	}{
		{"plain", "`go test ./starter/cli -run TestX` runs", []string{"./starter/cli"}, "TestX"},
		{"single quotes", "(`go test ./a -run 'A|B' -v`; more)", []string{"./a"}, "A|B"},
		{"double quotes", "`go test ./a -run \"A|B\"`", []string{"./a"}, "A|B"},
		{"equals", "`go test -run=TestY ./b`", []string{"./b"}, "TestY"},
		{"over a line break", "see `go test ./starter -run\nTestReviewDeskEndToEnd` drives", []string{"./starter"}, "TestReviewDeskEndToEnd"},
		{"env first", "`X=1 go test ./a -run '^TestH$' -v`", []string{"./a"}, "^TestH$"},
		{"table pipe", "| `go test ./a -run 'A\\|B'` |", []string{"./a"}, "A|B"},
		{"fenced line", "```sh\ngo test ./a -count=1\n./b -run X\n```\n", []string{"./a"}, ""},
		{"continued", "```sh\ngo test ./a \\\n  -run X\n```\n", []string{"./a"}, "X"},
		{"value flag", "`go test ./a -seed 12 -timeout 5m -run X -update`", []string{"./a"}, "X"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmds := goTestCmds(tt.text)
			if len(cmds) != 1 {
				t.Fatalf("got %d commands, want 1: %+v", len(cmds), cmds)
			}
			pkgs, run, _ := parseGoTest(cmds[0].args)
			if !slices.Equal(pkgs, tt.pkgs) || run != tt.run {
				t.Errorf("got packages %q, -run %q; want %q, %q (args %q)", pkgs, run, tt.pkgs, tt.run, cmds[0].args)
			}
		})
	}
	if got := topLevel("TestA/sub[/]x/y"); got != "TestA" {
		t.Errorf("topLevel: got %q, want TestA", got)
	}
}

// TestDocsNameRealTestsCatches: the checks refuse what went stale before
// (a package that lost its tests, a pattern no test of the package
// matches, a test file that moved) and pass what is right.
func TestDocsNameRealTestsCatches(t *testing.T) {
	root, idx := repoIndex(t)
	tests := []struct {
		text string
		want string // in the one problem, "" for none
	}{
		{"`go test ./docs -run TestDocsNameRealTests`", ""},
		{"`go test ./docs -run 'DocsNameReal|GoBlocks/sub'`", ""},
		{"`go test ./... -run Nothing`", ""},
		{"`go test ./starter -run TestDocsNameRealTests`", "write `go test ./docs -run TestDocsNameRealTests`"},
		{"`go test ./workflows -run TestDocsNameRealTests`", "matches no Test, Fuzz or Example function of ./workflows"},
		{"`go test ./nowhere -run X`", "there is no package ./nowhere"},
		{"`go test ./docs -run '('`", "is not a Go regexp"},
		{"see docs/testrefs_test.go", ""},
		{"see testrefs_test.go", ""},
		{"see starter/testrefs_test.go", "write docs/testrefs_test.go"},
	}
	for _, tt := range tests {
		var problems []string
		for _, c := range goTestCmds(tt.text) {
			problems = append(problems, checkGoTest(idx, root, "x.md", c)...)
		}
		problems = append(problems, checkTestFiles(idx, root, "x.md", tt.text)...)
		switch {
		case tt.want == "" && len(problems) > 0:
			t.Errorf("%s: got %q, want no problem", tt.text, problems)
		case tt.want != "" && (len(problems) != 1 || !strings.Contains(problems[0], tt.want)):
			t.Errorf("%s: got %q, want one problem with %q", tt.text, problems, tt.want)
		}
	}
}
