// Package gen reads client-go's generated informers packages (their
// source, with go/parser) and writes this module's: informers/zz_generated.go
// (the factory's group accessors and the table behind ForResource), one
// zz_generated.go in each group and version package and in
// internalinterfaces (client-go's names: its types as aliases, its
// constructors building this module's informers), and
// informers/zz_generated_test.go (every one of client-go's names against
// ours). Run it with `go generate ./informers`.
package gen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// clientGoModule is the import path of client-go; paths below it are
// mapped to directories under the directory Generate is given.
const clientGoModule = "k8s.io/client-go"

// group is one API group as the factory exposes it (Core(), Apps(), ...).
type group struct {
	method   string // the factory's method, e.g. "Core"
	pkg      string // client-go's group package, e.g. ".../informers/core"
	src      *pkgSource
	versions []version
}

// version is one version of a group (V1(), V1beta1(), ...).
type version struct {
	method    string // the group's method, e.g. "V1"
	pkg       string // client-go's version package
	src       *pkgSource
	resources []resource          // the Interface's accessors, in its order
	kinds     map[string]resource // every kind with a constructor, by kind
}

// resource is one informer accessor of a version, with what
// NewTyped<Kind>InformerWithOptions in client-go says about it.
type resource struct {
	method      string    // the version's method, e.g. "ConfigMaps"
	iface       string    // its result type, e.g. "TypedConfigMapInformer"
	kind        string    // e.g. "ConfigMap"
	gvr         [3]string // group, version, resource
	clientGroup string    // e.g. "CoreV1"
	clientRes   string    // e.g. "ConfigMaps"
	namespaced  bool      // the client accessor takes a namespace
	objPkg      string    // import path of the object's type
	listerPkg   string    // import path of the lister
	listerFunc  string    // e.g. "NewConfigMapLister"
	listerType  string    // e.g. "ConfigMapLister"
}

// forResource is one case of client-go's ForResource: a GVR and the
// accessor chain that serves it.
type forResource struct {
	gvr                  [3]string
	group, version, name string // accessor methods
}

// model is everything the generated file is written from.
type model struct {
	groups   []group
	generic  []forResource
	internal *pkgSource // informers/internalinterfaces
}

// file is a parsed source file with its imports by name.
type file struct {
	ast     *ast.File
	imports map[string]string
}

func parseFile(path string) (*file, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	imports := map[string]string{}
	for _, spec := range f.Imports {
		p, _ := strconv.Unquote(spec.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if spec.Name != nil {
			name = spec.Name.Name
		}
		imports[name] = p
	}
	return &file{ast: f, imports: imports}, nil
}

// parseDir parses the non-test Go files of dir, sorted by name.
func parseDir(dir string) ([]*file, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var files []*file
	for _, n := range names {
		f, err := parseFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// pkgSource is one of client-go's packages, parsed.
type pkgSource struct {
	path  string // import path
	name  string // package name
	files []*file
}

func loadPkg(root, path string) (*pkgSource, error) {
	dir, err := dirOf(root, path)
	if err != nil {
		return nil, err
	}
	files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no Go files", path)
	}
	return &pkgSource{path: path, name: files[0].ast.Name.Name, files: files}, nil
}

// typeDecl is an exported type declaration of a package.
type typeDecl struct {
	name string
	spec *ast.TypeSpec
}

// funcDecl is an exported function (no receiver) of a package.
type funcDecl struct {
	f  *file
	fd *ast.FuncDecl
}

// exported lists the package's exported types and functions in file and
// source order; exported variables and constants are an error (the
// generator would not know what to make of them).
func (p *pkgSource) exported() ([]typeDecl, []funcDecl, error) {
	var types []typeDecl
	var funcs []funcDecl
	for _, f := range p.files {
		for _, d := range f.ast.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					funcs = append(funcs, funcDecl{f, d})
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							types = append(types, typeDecl{s.Name.Name, s})
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								return nil, nil, fmt.Errorf("%s: exported %s %s is not handled", p.path, d.Tok, n.Name)
							}
						}
					}
				}
			}
		}
	}
	return types, funcs, nil
}

// method is one method of an interface: its name and result type.
type method struct {
	name   string
	result ast.Expr
}

// interfaceMethods lists the methods of the interface type name in f, in
// source order; an error if f does not declare it.
func interfaceMethods(f *file, name string) ([]method, error) {
	for _, d := range f.ast.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			ts := s.(*ast.TypeSpec)
			it, ok := ts.Type.(*ast.InterfaceType)
			if !ok || ts.Name.Name != name {
				continue
			}
			var ms []method
			for _, m := range it.Methods.List {
				ft, ok := m.Type.(*ast.FuncType)
				if !ok || len(m.Names) != 1 || ft.Results == nil || len(ft.Results.List) != 1 {
					continue
				}
				ms = append(ms, method{m.Names[0].Name, ft.Results.List[0].Type})
			}
			return ms, nil
		}
	}
	return nil, fmt.Errorf("no interface %s", name)
}

// pkgInterfaces maps the methods of interface name in f whose result is
// "<pkg>.Interface" to (method, import path), in source order.
func pkgInterfaces(f *file, name string) ([][2]string, error) {
	ms, err := interfaceMethods(f, name)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, m := range ms {
		sel, ok := m.result.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Interface" {
			continue
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || f.imports[x.Name] == "" {
			return nil, fmt.Errorf("%s.%s: unknown package %v", name, m.name, sel.X)
		}
		out = append(out, [2]string{m.name, f.imports[x.Name]})
	}
	return out, nil
}
