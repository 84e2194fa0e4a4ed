package leasehold_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// publicPackages are the packages users import from the library's module,
// and the test kit's.
var publicPackages = []string{".", "lease", "rlock", "fairqueue", "rw", "quorum", "semaphore", "script",
	"event", "election", "fence", "leasetest", "partition"}

// maxPublicNames bounds what users can call: every exported name is a
// promise kept for years. 130 before package fence, which brought 20, and
// WithKeyPrefix and (*Client).Check, for services that share a Redis behind
// an ACL and are probed (issue 41); (*Client).Fence and HealthHandler, so
// that fencing needs no second client and a probe no handler of its own
// (issue 49); (*partition.Group).Name, so that a group's metrics name it
// (issue 51).
const maxPublicNames = 164

// The public surface stays small and reads as its own: at most
// maxPublicNames exported names (consts, vars, funcs, types, methods, as
// go/doc counts them), and no declaration users read in godoc names a type
// of an internal package (they could follow it nowhere).
func TestPublicSurface(t *testing.T) {
	internalName := regexp.MustCompile(`\b(core|engine|hub|lua|retry|leasestate|clientcore|redistest|locktest)\.[A-Z]`)
	total := 0
	for _, dir := range publicPackages {
		d := packageDoc(t, dir)
		n := 0
		check := func(name string, decl ast.Decl) {
			var b strings.Builder
			_ = printer.Fprint(&b, token.NewFileSet(), decl)
			if m := internalName.FindString(b.String()); m != "" {
				t.Errorf("%s: %s shows an internal name in godoc: %s", dir, name, m)
			}
		}
		values := func(vs []*doc.Value) {
			for _, v := range vs {
				n += len(v.Names)
				check(strings.Join(v.Names, ","), v.Decl)
			}
		}
		funcs := func(fs []*doc.Func) {
			for _, f := range fs {
				n++
				check(f.Name, f.Decl)
			}
		}
		values(d.Consts)
		values(d.Vars)
		funcs(d.Funcs)
		for _, typ := range d.Types {
			n++
			check(typ.Name, typ.Decl)
			values(typ.Consts)
			values(typ.Vars)
			funcs(typ.Funcs)
			funcs(typ.Methods)
		}
		t.Logf("%-10s %d", dir, n)
		total += n
	}
	t.Logf("total      %d", total)
	if total > maxPublicNames {
		t.Errorf("%d exported names in %v, more than %d", total, publicPackages, maxPublicNames)
	}
}

// packageDoc is go/doc's view of the package in dir, as godoc shows it.
func packageDoc(t *testing.T, dir string) *doc.Package {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("no package in %s", dir)
	}
	d, err := doc.NewFromFiles(fset, files, "example.com/"+filepath.ToSlash(dir))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
