package fusefs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInterfaceChecks: every method of this package named like a method of
// a go-fuse operation interface (fs.NodeLookuper's Lookup, fs.FileReader's
// Read, ...) has its compile-time check in checks.go, so that a signature
// that drifts from go-fuse's fails the build instead of silently leaving
// the embedded fs.Inode's default in place.
func TestInterfaceChecks(t *testing.T) {
	// The one-method operation interfaces of go-fuse's fs package, by
	// method name.
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/hanwen/go-fuse/v2/fs").Output()
	if err != nil {
		t.Fatalf("go list github.com/hanwen/go-fuse/v2/fs: %v", err)
	}
	interfaces := map[string][]string{} // method -> interfaces
	for _, f := range parseDir(t, strings.TrimSpace(string(out))) {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				it, ok := ts.Type.(*ast.InterfaceType)
				name := ts.Name.Name
				if !ok || !ast.IsExported(name) || !(strings.HasPrefix(name, "Node") || strings.HasPrefix(name, "File")) ||
					len(it.Methods.List) != 1 || len(it.Methods.List[0].Names) != 1 {
					continue
				}
				m := it.Methods.List[0].Names[0].Name
				interfaces[m] = append(interfaces[m], name)
			}
		}
	}
	if len(interfaces["Lookup"]) == 0 || len(interfaces["Read"]) == 0 {
		t.Fatalf("found no fs.NodeLookuper or fs.FileReader in go-fuse's source: %v", interfaces)
	}

	// The checks: `_ = (fs.IFACE)((*TYPE)(nil))` in checks.go.
	checked := map[string]bool{} // "TYPE IFACE"
	files := parseDir(t, ".")
	ast.Inspect(files["checks.go"], func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		iface, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if conv, ok := call.Args[0].(*ast.CallExpr); ok {
			if star, ok := ast.Unparen(conv.Fun).(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok {
					checked[id.Name+" "+iface.Sel.Name] = true
				}
			}
		}
		return true
	})
	if len(checked) == 0 {
		t.Fatal("checks.go holds no interface checks")
	}

	for name, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(interfaces[fd.Name.Name]) == 0 {
				continue
			}
			recv := fd.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			typ := recv.(*ast.Ident).Name
			if !slices.ContainsFunc(interfaces[fd.Name.Name], func(iface string) bool { return checked[typ+" "+iface] }) {
				t.Errorf("%s: %s.%s has no compile-time check; add `_ = (fs.IFACE)((*%s)(nil))` to checks.go, IFACE being the one of fs.%s that %s implements",
					name, typ, fd.Name.Name, typ, strings.Join(interfaces[fd.Name.Name], ", fs."), typ)
			}
		}
	}
}

// parseDir parses the Go files of dir, tests excluded, by file name.
func parseDir(t *testing.T, dir string) map[string]*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = f
	}
	return files
}
