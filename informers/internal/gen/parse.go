package gen

import (
	"fmt"
	"go/ast"
	"path/filepath"
	"strings"
)

// load builds the model from client-go's source rooted at dir (the
// module's directory).
func load(dir string) (*model, error) {
	informers := filepath.Join(dir, "informers")
	factory, err := parseFile(filepath.Join(informers, "factory.go"))
	if err != nil {
		return nil, err
	}
	groups, err := pkgInterfaces(factory, "SharedInformerFactory")
	if err != nil {
		return nil, err
	}
	m := &model{}
	if m.internal, err = loadPkg(dir, clientGoModule+"/informers/internalinterfaces"); err != nil {
		return nil, err
	}
	for _, g := range groups {
		grp, err := loadGroup(dir, g[0], g[1])
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", g[0], err)
		}
		m.groups = append(m.groups, grp)
	}
	generic, err := parseFile(filepath.Join(informers, "generic.go"))
	if err != nil {
		return nil, err
	}
	if m.generic, err = forResources(generic, m); err != nil {
		return nil, err
	}
	return m, nil
}

// dirOf is the directory of a client-go package.
func dirOf(root, pkg string) (string, error) {
	rel, ok := strings.CutPrefix(pkg, clientGoModule+"/")
	if !ok {
		return "", fmt.Errorf("%s is not in %s", pkg, clientGoModule)
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

func loadGroup(root, name, pkg string) (group, error) {
	src, err := loadPkg(root, pkg)
	if err != nil {
		return group{}, err
	}
	var vs [][2]string
	for _, f := range src.files {
		if got, err := pkgInterfaces(f, "Interface"); err == nil {
			vs = got
		}
	}
	if vs == nil {
		return group{}, fmt.Errorf("%s: no Interface", pkg)
	}
	g := group{method: name, pkg: pkg, src: src}
	for _, v := range vs {
		ver, err := loadVersion(root, v[0], v[1])
		if err != nil {
			return group{}, fmt.Errorf("version %s: %w", v[0], err)
		}
		g.versions = append(g.versions, ver)
	}
	return g, nil
}

func loadVersion(root, name, pkg string) (version, error) {
	src, err := loadPkg(root, pkg)
	if err != nil {
		return version{}, err
	}
	kinds := map[string]resource{}
	var methods []method
	for _, f := range src.files {
		if ms, err := interfaceMethods(f, "Interface"); err == nil {
			methods = ms
		}
		if err := collectResources(f, kinds); err != nil {
			return version{}, err
		}
	}
	v := version{method: name, pkg: pkg, src: src, kinds: kinds}
	for _, m := range methods {
		id, ok := m.result.(*ast.Ident)
		kind := strings.TrimSuffix(strings.TrimPrefix(identName(id), "Typed"), "Informer")
		r, found := kinds[kind]
		if !ok || !found {
			return version{}, fmt.Errorf("%s: no constructor for %v", m.name, m.result)
		}
		r.method, r.iface = m.name, id.Name
		v.resources = append(v.resources, r)
	}
	return v, nil
}

func identName(id *ast.Ident) string {
	if id == nil {
		return ""
	}
	return id.Name
}

// collectResources adds to kinds each resource whose
// NewTyped<Kind>InformerWithOptions f declares, with its lister.
func collectResources(f *file, kinds map[string]resource) error {
	var found []resource
	var listerPkg, listerFunc, listerType string
	for _, d := range f.ast.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := fd.Name.Name
		if kind, ok := cutAround(name, "NewTyped", "InformerWithOptions"); ok && fd.Recv == nil {
			r, err := parseConstructor(f, fd)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			r.kind = kind
			found = append(found, r)
		}
		if name == "Lister" && fd.Recv != nil {
			listerPkg, listerFunc = listerCall(f, fd)
			listerType = resultName(fd)
		}
	}
	for _, r := range found {
		if listerFunc == "" {
			return fmt.Errorf("%s: no Lister method", r.kind)
		}
		if listerType == "" {
			return fmt.Errorf("%s: the Lister method's result is not <pkg>.<Type>", r.kind)
		}
		r.listerPkg, r.listerFunc, r.listerType = listerPkg, listerFunc, listerType
		kinds[r.kind] = r
	}
	return nil
}

// resultName is the type name of a method's one result <pkg>.<Type>.
func resultName(fd *ast.FuncDecl) string {
	res := fd.Type.Results
	if res == nil || len(res.List) != 1 {
		return ""
	}
	if sel, ok := res.List[0].Type.(*ast.SelectorExpr); ok {
		return sel.Sel.Name
	}
	return ""
}

func cutAround(s, prefix, suffix string) (string, bool) {
	s, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(s, suffix)
}

// listerCall finds "<pkg>.New<Kind>Lister(" in a Lister method.
func listerCall(f *file, fd *ast.FuncDecl) (pkg, fn string) {
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || pkg != "" {
			return pkg == ""
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && strings.HasPrefix(sel.Sel.Name, "New") {
				pkg, fn = f.imports[x.Name], sel.Sel.Name
			}
		}
		return true
	})
	return pkg, fn
}
