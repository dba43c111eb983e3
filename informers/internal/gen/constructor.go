package gen

import (
	"fmt"
	"go/ast"
	"strconv"
	"strings"
)

// parseConstructor reads a NewTyped<Kind>InformerWithOptions body: the
// GroupVersionResource literal, the client call before .List and the
// example object's type.
func parseConstructor(f *file, fd *ast.FuncDecl) (resource, error) {
	var r resource
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if isSelector(n.Type, "schema", "GroupVersionResource") {
				r.gvr = gvrFields(n)
			}
		case *ast.UnaryExpr:
			if lit, ok := n.X.(*ast.CompositeLit); ok && r.objPkg == "" {
				if sel, ok := lit.Type.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && strings.HasPrefix(f.imports[x.Name], "k8s.io/api/") {
						r.objPkg = f.imports[x.Name]
					}
				}
			}
		case *ast.CallExpr:
			if r.clientRes == "" {
				r.clientGroup, r.clientRes, r.namespaced = clientCall(n)
			}
		}
		return true
	})
	switch {
	case r.gvr[2] == "":
		return r, fmt.Errorf("no GroupVersionResource")
	case r.clientRes == "":
		return r, fmt.Errorf("no client.<Group>().<Resource>().List call")
	case r.objPkg == "":
		return r, fmt.Errorf("no example object")
	}
	return r, nil
}

func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg
}

func gvrFields(lit *ast.CompositeLit) [3]string {
	var gvr [3]string
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		val, _ := kv.Value.(*ast.BasicLit)
		if key == nil || val == nil {
			continue
		}
		s, _ := strconv.Unquote(val.Value)
		switch key.Name {
		case "Group":
			gvr[0] = s
		case "Version":
			gvr[1] = s
		case "Resource":
			gvr[2] = s
		}
	}
	return gvr
}

// clientCall matches client.<Group>().<Resource>(...).List(...).
func clientCall(call *ast.CallExpr) (grp, res string, namespaced bool) {
	list, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || list.Sel.Name != "List" {
		return "", "", false
	}
	resCall, ok := list.X.(*ast.CallExpr)
	if !ok {
		return "", "", false
	}
	resSel, ok := resCall.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", "", false
	}
	grpCall, ok := resSel.X.(*ast.CallExpr)
	if !ok {
		return "", "", false
	}
	grpSel, ok := grpCall.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", "", false
	}
	if x, ok := grpSel.X.(*ast.Ident); !ok || x.Name != "client" {
		return "", "", false
	}
	return grpSel.Sel.Name, resSel.Sel.Name, len(resCall.Args) > 0
}

// accessorChain matches f.<Group>().<Version>().<Resource>().Informer().
func accessorChain(e ast.Expr) (names []string) {
	for {
		call, ok := e.(*ast.CallExpr)
		if !ok {
			break
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			break
		}
		names = append([]string{sel.Sel.Name}, names...)
		e = sel.X
	}
	return names
}

// forResources reads the cases of client-go's ForResource and checks each
// against the model.
func forResources(f *file, m *model) ([]forResource, error) {
	var out []forResource
	var err error
	ast.Inspect(f.ast, func(n ast.Node) bool {
		cc, ok := n.(*ast.CaseClause)
		if !ok || err != nil || len(cc.List) != 1 || len(cc.Body) != 1 {
			return err == nil
		}
		var fr forResource
		fr, err = parseCase(f, cc, m)
		if err == nil {
			out = append(out, fr)
		}
		return false
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("generic.go: no ForResource cases")
	}
	return out, err
}

// parseCase reads one case. Its resource name is client-go's ForResource
// key, which may differ from the identifier's GVR in the constructor (as
// "mutatingadmissionpolicys" does); group and version come from the
// constructor, whose API package must be the case's.
func parseCase(f *file, cc *ast.CaseClause, m *model) (forResource, error) {
	call, ok := cc.List[0].(*ast.CallExpr)
	ret, ok2 := cc.Body[0].(*ast.ReturnStmt)
	if !ok || !ok2 || len(call.Args) != 1 || len(ret.Results) == 0 {
		return forResource{}, fmt.Errorf("generic.go: unexpected case at %d", cc.Pos())
	}
	lit, _ := call.Args[0].(*ast.BasicLit)
	name, _ := strconv.Unquote(identLit(lit))
	var chain []string
	ast.Inspect(ret.Results[0], func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "informer" {
				chain = accessorChain(kv.Value)
			}
		}
		return chain == nil
	})
	if len(chain) != 4 || chain[3] != "Informer" {
		return forResource{}, fmt.Errorf("generic.go: case %q: unexpected informer %v", name, chain)
	}
	r, ok := m.find(chain[0], chain[1], chain[2])
	if !ok || r.objPkg != casePackage(f, call) {
		return forResource{}, fmt.Errorf("generic.go: case %q: %v is not a known accessor of that resource", name, chain)
	}
	return forResource{gvr: [3]string{r.gvr[0], r.gvr[1], name}, group: chain[0], version: chain[1], name: chain[2]}, nil
}

// casePackage is the import path of <pkg> in <pkg>.SchemeGroupVersion.WithResource.
func casePackage(f *file, call *ast.CallExpr) string {
	with, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	sgv, ok := with.X.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sgv.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return f.imports[x.Name]
}

func identLit(l *ast.BasicLit) string {
	if l == nil {
		return ""
	}
	return l.Value
}

// find returns the resource behind the accessor chain g().v().r().
func (m *model) find(g, v, r string) (resource, bool) {
	for _, grp := range m.groups {
		for _, ver := range grp.versions {
			for _, res := range ver.resources {
				if grp.method == g && ver.method == v && res.method == r {
					return res, true
				}
			}
		}
	}
	return resource{}, false
}
