package plugin

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// publicPackages are the packages another module builds on.
var publicPackages = []string{
	"github.com/memagent/memagent/api",
	"github.com/memagent/memagent/plugin",
	"github.com/memagent/memagent/memclient",
	"github.com/memagent/memagent/workflows",
	"github.com/memagent/memagent/activities",
	"github.com/memagent/memagent/rollout",
}

// TestPublicAPINeedsNoInternalType checks that every type reachable from
// an exported name of the public packages (fields, parameters, results,
// interface methods, recursively) that is declared in internal/ has a
// public name: an exported alias in one of the public packages. Code in
// another module cannot import internal/, so a type without one could be
// used but never named, built or implemented there.
func TestPublicAPINeedsNoInternalType(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the public packages")
	}
	pkgs := loadExported(t, publicPackages)

	public := map[*types.TypeName]string{} // internal type -> its public alias
	for _, p := range pkgs {
		sc := p.Scope()
		for _, n := range sc.Names() {
			tn, ok := sc.Lookup(n).(*types.TypeName)
			if !ok || !tn.Exported() || !tn.IsAlias() {
				continue
			}
			if named, ok := types.Unalias(tn.Type()).(*types.Named); ok && internal(named.Obj().Pkg()) {
				public[named.Obj()] = p.Name() + "." + n
			}
		}
	}

	w := &apiWalker{seen: map[types.Type]bool{}, missing: map[string][]string{}, public: public}
	for _, p := range pkgs {
		sc := p.Scope()
		for _, n := range sc.Names() {
			o := sc.Lookup(n)
			if !o.Exported() {
				continue
			}
			w.walk(p.Name()+"."+n, o.Type())
		}
	}
	var lines []string
	for typ, where := range w.missing {
		lines = append(lines, typ+" (used by "+strings.Join(where, ", ")+")")
	}
	sort.Strings(lines)
	for _, l := range lines {
		t.Errorf("internal type without a public name: %s", l)
	}
	if len(public) == 0 {
		t.Error("no public aliases found: the walker is not looking at the packages")
	}
}

// apiWalker visits the types reachable from exported names.
type apiWalker struct {
	seen    map[types.Type]bool
	missing map[string][]string
	public  map[*types.TypeName]string
}

func (w *apiWalker) walk(where string, t types.Type) {
	switch t := t.(type) {
	case *types.Alias:
		w.walk(where, types.Unalias(t))
	case *types.Named:
		pkg := t.Obj().Pkg()
		if pkg == nil || !strings.HasPrefix(pkg.Path(), "github.com/memagent/memagent") {
			return // the standard library, the Temporal and AWS SDKs
		}
		if internal(pkg) {
			if _, ok := w.public[t.Obj()]; !ok {
				name := t.Obj().Pkg().Path() + "." + t.Obj().Name()
				if len(w.missing[name]) < 3 {
					w.missing[name] = append(w.missing[name], where)
				}
			}
		}
		if w.seen[t] {
			return
		}
		w.seen[t] = true
		w.walk(where, t.Underlying())
		for i := 0; i < t.NumMethods(); i++ {
			if m := t.Method(i); m.Exported() {
				w.walk(where+"."+m.Name(), m.Type())
			}
		}
	case *types.Pointer:
		w.walk(where, t.Elem())
	case *types.Slice:
		w.walk(where, t.Elem())
	case *types.Array:
		w.walk(where, t.Elem())
	case *types.Map:
		w.walk(where, t.Key())
		w.walk(where, t.Elem())
	case *types.Chan:
		w.walk(where, t.Elem())
	case *types.Signature:
		for i := 0; i < t.Params().Len(); i++ {
			w.walk(where, t.Params().At(i).Type())
		}
		for i := 0; i < t.Results().Len(); i++ {
			w.walk(where, t.Results().At(i).Type())
		}
	case *types.Struct:
		for i := 0; i < t.NumFields(); i++ {
			if f := t.Field(i); f.Exported() {
				w.walk(where+"."+f.Name(), f.Type())
			}
		}
	case *types.Interface:
		for i := 0; i < t.NumMethods(); i++ {
			if m := t.Method(i); m.Exported() {
				w.walk(where+"."+m.Name(), m.Type())
			}
		}
	}
}

func internal(p *types.Package) bool {
	return p != nil && strings.Contains(p.Path()+"/", "/internal/")
}

// loadExported type-checks paths from the compiler's export data, which
// `go list -export` builds (or finds in the build cache).
func loadExported(t *testing.T, paths []string) []*types.Package {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	var pkgs []*types.Package
	for _, path := range paths {
		p, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

var updateAPI = flag.Bool("update-api", false, "rewrite testdata/publicapi.txt from the public packages")

// TestPublicAPISurface lists every exported name of the public packages,
// with its type, in testdata/publicapi.txt: a change to the surface other
// modules build on shows in review as a change to that file
// (go test ./plugin -run PublicAPISurface -update-api).
func TestPublicAPISurface(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the public packages")
	}
	var b strings.Builder
	qual := func(p *types.Package) string { return p.Name() }
	for _, p := range loadExported(t, publicPackages) {
		fmt.Fprintf(&b, "package %s\n", p.Path())
		sc := p.Scope()
		for _, n := range sc.Names() {
			o := sc.Lookup(n)
			if !o.Exported() {
				continue
			}
			fmt.Fprintf(&b, "\t%s\n", surfaceString(o, qual))
			if tn, ok := o.(*types.TypeName); ok && !tn.IsAlias() {
				if named, ok := tn.Type().(*types.Named); ok {
					for i := range named.NumMethods() {
						if m := named.Method(i); m.Exported() {
							fmt.Fprintf(&b, "\t\t%s\n", types.ObjectString(m, qual))
						}
					}
				}
			}
		}
	}
	path := filepath.Join("testdata", "publicapi.txt")
	if *updateAPI {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go test ./plugin -run PublicAPISurface -update-api", err)
	}
	if string(want) != b.String() {
		t.Errorf("the public API differs from %s: review the change, then go test ./plugin -run PublicAPISurface -update-api", path)
	}
}

// surfaceString is o as the surface shows it: a struct type with its
// exported fields only (unexported ones are no one else's business), every
// other object as go/types prints it.
func surfaceString(o types.Object, qual types.Qualifier) string {
	tn, ok := o.(*types.TypeName)
	if !ok || tn.IsAlias() {
		return types.ObjectString(o, qual)
	}
	st, ok := tn.Type().Underlying().(*types.Struct)
	if !ok {
		return types.ObjectString(o, qual)
	}
	var fields []string
	for i := range st.NumFields() {
		if f := st.Field(i); f.Exported() {
			name := f.Name() + " "
			if f.Embedded() {
				name = ""
			}
			fields = append(fields, name+types.TypeString(f.Type(), qual))
		}
	}
	return "type " + qual(tn.Pkg()) + "." + tn.Name() + " struct{" + strings.Join(fields, "; ") + "}"
}

// TestPluginDocNamesNoInternalPackage reads `go doc -all ./plugin` as an
// embedder does and fails when it names a package of memagent's internal/
// (a qualified name such as inference.Pool whose package plugin imports
// from internal/): such a name can be read but not written in another
// module. memagent's own tools reach the store, model pool and activities
// through internal/pluginkit instead.
func TestPluginDocNamesNoInternalPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go doc and go list")
	}
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	internalNames := map[string]string{}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, "github.com/memagent/memagent/internal/") {
			internalNames[filepath.Base(imp)] = imp
		}
	}
	doc, err := exec.Command("go", "doc", "-all", ".").Output()
	if err != nil {
		t.Fatalf("go doc: %v", err)
	}
	qualified := regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z]\w*)`)
	for i, line := range strings.Split(string(doc), "\n") {
		// Declarations only: prose (indented four spaces, or a // comment)
		// names workflow types such as memagent.DocumentQA.
		code := line
		if !strings.HasPrefix(code, "\t") && !regexp.MustCompile(`^(func|type|const|var) `).MatchString(code) {
			continue
		}
		if c := strings.Index(code, "//"); c >= 0 {
			code = code[:c]
		}
		for _, m := range qualified.FindAllStringSubmatch(code, -1) {
			if path, ok := internalNames[m[1]]; ok {
				t.Errorf("go doc line %d names %s.%s (%s): %s", i+1, m[1], m[2], path, strings.TrimSpace(line))
			}
		}
	}
	if strings.Contains(string(doc), "memagent/internal/") {
		t.Error("go doc -all ./plugin names an internal/ import path")
	}
}
