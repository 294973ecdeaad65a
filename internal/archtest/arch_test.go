// Package archtest checks rules of the code's shape that no compiler
// checks: which packages may import which, and how agents branch.
package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/loomkit/loom"

// pkg is one package of the module, read from its non-test files.
type pkg struct {
	dir     string // relative to the module root, slash-separated
	imports map[string]bool
	files   []*ast.File
}

func readTree(t *testing.T) map[string]*pkg {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		p := pkgs[rel]
		if p == nil {
			p = &pkg{dir: rel, imports: map[string]bool{}}
			pkgs[rel] = p
		}
		p.files = append(p.files, f)
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(ip, module+"/"); ok {
				p.imports[rest] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the tree: %v", err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("read only %d packages; is the test run from internal/archtest?", len(pkgs))
	}
	return pkgs
}

// deps is every package of the module that dir depends on, directly or
// through others.
func deps(pkgs map[string]*pkg, dir string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(d string) {
		p := pkgs[d]
		if p == nil {
			return
		}
		for ip := range p.imports {
			if !seen[ip] {
				seen[ip] = true
				walk(ip)
			}
		}
	}
	walk(dir)
	return seen
}

// TestRuntimeDoesNotImportModelLayer keeps the graph runtime free of the
// model layer: graph depends on neither llm nor contract.
func TestRuntimeDoesNotImportModelLayer(t *testing.T) {
	pkgs := readTree(t)
	for d := range deps(pkgs, "graph") {
		if d == "llm" || strings.HasPrefix(d, "llm/") || d == "contract" || strings.HasPrefix(d, "contract/") {
			t.Errorf("graph depends on %s", d)
		}
	}
}

// TestNoAppImportsAnother keeps the apps apart: apps/X never imports
// apps/Y; what two apps share lives in the framework or apps/internal.
func TestNoAppImportsAnother(t *testing.T) {
	pkgs := readTree(t)
	app := func(dir string) string {
		parts := strings.Split(dir, "/")
		if len(parts) < 2 || parts[0] != "apps" || parts[1] == "internal" {
			return ""
		}
		return parts[1]
	}
	var bad []string
	for dir, p := range pkgs {
		from := app(dir)
		if from == "" {
			continue
		}
		for ip := range p.imports {
			if to := app(ip); to != "" && to != from {
				bad = append(bad, dir+" imports "+ip)
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// TestRoutesReadFacts refuses a route that only returns a state field:
// such a field holds a node name a node chose, which hides the branching
// from the drawn graph. A route reads facts and names its targets itself.
func TestRoutesReadFacts(t *testing.T) {
	pkgs := readTree(t)
	checked := 0
	for dir, p := range pkgs {
		funcs := map[string]*ast.FuncDecl{}
		for _, f := range p.files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
					funcs[fd.Name.Name] = fd
				}
			}
		}
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) < 3 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Route" {
					return true
				}
				var ft *ast.FuncType
				var body *ast.BlockStmt
				switch fn := call.Args[1].(type) {
				case *ast.FuncLit:
					ft, body = fn.Type, fn.Body
				case *ast.Ident:
					if fd := funcs[fn.Name]; fd != nil {
						ft, body = fd.Type, fd.Body
					}
				}
				if body == nil || ft.Params == nil || len(ft.Params.List) == 0 || len(ft.Params.List[0].Names) == 0 {
					return true
				}
				checked++
				state := ft.Params.List[0].Names[0].Name
				ast.Inspect(body, func(n ast.Node) bool {
					ret, ok := n.(*ast.ReturnStmt)
					if !ok || len(ret.Results) == 0 {
						return true
					}
					if sel, ok := ret.Results[0].(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == state {
							t.Errorf("%s: a route returns the state field %s.%s: route on facts and name the target instead", dir, state, sel.Sel.Name)
						}
					}
					return true
				})
				return true
			})
		}
	}
	if checked == 0 {
		t.Fatal("found no Route calls to check")
	}
}
