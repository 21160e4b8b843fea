package contract

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// SourceDocs reads the doc comments of the struct types and fields declared
// in the Go packages at dirs (import path → directory) and returns them as a
// Describer, so that schemas and the API reference carry the same words as
// `go doc`. Test files are skipped.
func SourceDocs(dirs map[string]string) (Describer, error) {
	docs := map[string]string{}
	fset := token.NewFileSet()
	for pkg, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("source docs: %w", err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
			if err != nil {
				return nil, fmt.Errorf("source docs: %w", err)
			}
			collectDocs(f, pkg, docs)
		}
	}
	return func(owner reflect.Type, goField string) string {
		key := owner.PkgPath() + "." + owner.Name()
		if goField != "" {
			key += "." + goField
		}
		return docs[key]
	}, nil
}

func collectDocs(f *ast.File, pkg string, docs map[string]string) {
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok || ts.Assign != 0 {
				continue
			}
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			key := pkg + "." + ts.Name.Name
			if t := commentText(doc); t != "" {
				docs[key] = t
			}
			for _, field := range st.Fields.List {
				text := commentText(field.Doc)
				if text == "" {
					text = commentText(field.Comment)
				}
				if text == "" {
					continue
				}
				for _, n := range field.Names {
					docs[key+"."+n.Name] = text
				}
			}
		}
	}
}

// commentText joins a comment group into one paragraph.
func commentText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}
