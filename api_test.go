package cache_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/constant"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const (
	clientGoCache = "k8s.io/client-go/tools/cache"
	ourCache      = "github.com/kreflector/cache"
)

// reimplemented names the exported types of client-go's tools/cache that are
// ours rather than aliases of client-go's. For each, the audit asks for the
// same kind, every exported field of the same type and every exported method
// with the same signature, reading client-go's package as ours where a
// signature names it (a *Reflector parameter is ours). Every row is listed
// in docs/compatibility.md.
var reimplemented = map[string]string{
	"Reflector":                    "the reimplementation itself",
	"ReflectorOptions":             "client-go's fields and more",
	"WatchErrorHandler":            "its *Reflector parameter is ours",
	"WatchErrorHandlerWithContext": "its *Reflector parameter is ours",
}

// TestClientGoAPIIsOurs compares client-go's exported API, type-checked from
// its source in the module cache, with ours, name by name: every name exists
// here with the same kind and signature. Types are client-go's own (aliases)
// unless listed in reimplemented; functions and variables may forward. A
// client-go upgrade that adds a name fails this test until we have it.
func TestClientGoAPIIsOurs(t *testing.T) {
	pkgs := typeCheck(t, clientGoCache, ourCache)
	theirs, ours := pkgs[clientGoCache], pkgs[ourCache]
	var problems []string
	for _, name := range theirs.Scope().Names() {
		obj := theirs.Scope().Lookup(name)
		if !obj.Exported() {
			continue
		}
		if p := compareObject(obj, ours.Scope().Lookup(name)); p != "" {
			problems = append(problems, name+": "+p)
		}
	}
	for name := range reimplemented {
		if obj, ok := ours.Scope().Lookup(name).(*types.TypeName); !ok || obj.IsAlias() {
			problems = append(problems, name+": listed as reimplemented but is not our own type")
		}
	}
	if len(problems) > 0 {
		t.Errorf("%d of client-go's exported names differ here:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

// compareObject says how ours differs from client-go's object of the same
// name, or "" when it does not.
func compareObject(theirs, ours types.Object) string {
	if ours == nil {
		return "missing (" + kindOf(theirs) + " " + shape(theirs.Type()) + ")"
	}
	switch th := theirs.(type) {
	case *types.Func:
		if _, isVar := ours.(*types.Var); !isVar && kindOf(ours) != "func" {
			return "is a " + kindOf(ours) + ", client-go's a func"
		}
	case *types.Const:
		o, ok := ours.(*types.Const)
		if !ok || !constant.Compare(th.Val(), token.EQL, o.Val()) {
			return fmt.Sprintf("client-go's constant %s, ours %v", th.Val(), ours)
		}
	case *types.TypeName:
		return compareType(th, ours)
	default:
		if kindOf(ours) != kindOf(theirs) {
			return "is a " + kindOf(ours) + ", client-go's a " + kindOf(theirs)
		}
	}
	if a, b := shape(theirs.Type()), shape(ours.Type()); a != b {
		return "signature " + b + ", client-go's " + a
	}
	return ""
}

// compareType holds a type to being client-go's own, or, for the listed
// reimplementations, to client-go's fields and methods.
func compareType(theirs *types.TypeName, ours types.Object) string {
	o, ok := ours.(*types.TypeName)
	if !ok {
		return "is a " + kindOf(ours) + ", client-go's a type"
	}
	if types.Identical(theirs.Type(), o.Type()) || isGenericAliasOf(o, theirs) {
		return ""
	}
	if _, ok := reimplemented[theirs.Name()]; !ok {
		return "is not client-go's type (alias it, or list it as reimplemented with its differences documented)"
	}
	var diffs []string
	if a, b := underlyingKind(theirs.Type()), underlyingKind(o.Type()); a != b {
		return "a " + b + ", client-go's a " + a
	}
	if s, ok := theirs.Type().Underlying().(*types.Struct); ok {
		diffs = append(diffs, compareFields(s, o.Type().Underlying().(*types.Struct))...)
	} else if a, b := shape(theirs.Type().Underlying()), shape(o.Type().Underlying()); a != b {
		diffs = append(diffs, "underlying "+b+", client-go's "+a)
	}
	diffs = append(diffs, compareMethods(theirs.Type(), o.Type())...)
	return strings.Join(diffs, "; ")
}

// isGenericAliasOf reports whether ours is `type N[P C] = theirs[P]`: an
// alias whose type parameters, with the same constraints, instantiate
// client-go's generic type in order.
func isGenericAliasOf(ours, theirs *types.TypeName) bool {
	alias, ok := ours.Type().(*types.Alias)
	named, isNamed := types.Unalias(ours.Type()).(*types.Named)
	if !ok || !isNamed || named.Origin() != theirs.Type() {
		return false
	}
	params, args := alias.TypeParams(), named.TypeArgs()
	if params.Len() != args.Len() || params.Len() != named.Origin().TypeParams().Len() {
		return false
	}
	for i := range params.Len() {
		p := params.At(i)
		if args.At(i) != p || shape(p.Constraint()) != shape(named.Origin().TypeParams().At(i).Constraint()) {
			return false
		}
	}
	return true
}

func compareFields(theirs, ours *types.Struct) (diffs []string) {
	have := map[string]string{}
	for f := range ours.Fields() {
		have[f.Name()] = shape(f.Type())
	}
	for f := range theirs.Fields() {
		if !f.Exported() {
			continue
		}
		if got, want := have[f.Name()], shape(f.Type()); got != want {
			diffs = append(diffs, fmt.Sprintf("field %s is %q, client-go's %q", f.Name(), got, want))
		}
	}
	return diffs
}

func compareMethods(theirs, ours types.Type) (diffs []string) {
	mine := types.NewMethodSet(types.NewPointer(ours))
	all := types.NewMethodSet(types.NewPointer(theirs))
	for sel := range all.Methods() {
		m := sel.Obj()
		if !m.Exported() {
			continue
		}
		got := mine.Lookup(m.Pkg(), m.Name())
		if got == nil {
			got = mine.Lookup(nil, m.Name())
		}
		want := shape(m.Type())
		if got == nil {
			diffs = append(diffs, "method "+m.Name()+" missing")
		} else if have := shape(got.Obj().Type()); have != want {
			diffs = append(diffs, fmt.Sprintf("method %s is %s, client-go's %s", m.Name(), have, want))
		}
	}
	return diffs
}

func kindOf(o types.Object) string {
	switch v := o.(type) {
	case *types.Func:
		return "func"
	case *types.Var:
		return "var"
	case *types.Const:
		return "const"
	case *types.TypeName:
		if v.IsAlias() {
			return "type alias"
		}
		return "type"
	}
	return fmt.Sprintf("%T", o)
}

func underlyingKind(t types.Type) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", t.Underlying()), "*types.")
}

// shape writes a type with both packages named "cache" and without
// parameter names, so that a signature reads the same whether it speaks of
// client-go's names or of ours.
func shape(t types.Type) string {
	if sig, ok := t.(*types.Signature); ok {
		return signatureShape(sig)
	}
	return types.TypeString(t, func(p *types.Package) string {
		if p.Path() == clientGoCache || p.Path() == ourCache {
			return "cache"
		}
		return p.Path()
	})
}

func signatureShape(sig *types.Signature) string {
	var b strings.Builder
	b.WriteString("func")
	if tp := sig.TypeParams(); tp.Len() > 0 {
		var ps []string
		for p := range tp.TypeParams() {
			ps = append(ps, shape(p.Constraint()))
		}
		b.WriteString("[" + strings.Join(ps, ", ") + "]")
	}
	b.WriteString(tupleShape(sig.Params(), sig.Variadic()))
	b.WriteString(" " + tupleShape(sig.Results(), false))
	return b.String()
}

func tupleShape(t *types.Tuple, variadic bool) string {
	var parts []string
	for i := 0; i < t.Len(); i++ {
		s := shape(t.At(i).Type())
		if variadic && i == t.Len()-1 {
			s = "..." + strings.TrimPrefix(s, "[]")
		}
		parts = append(parts, s)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// typeCheck loads the named packages from the export data the go command
// writes for them (compiled from the sources in the module cache), so the
// audit sees exactly what a user's build sees.
func typeCheck(t *testing.T, paths ...string) map[string]*types.Package {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read client-go's API: %v", err)
	}
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)
	var stderr bytes.Buffer
	cmd := exec.Command(goCmd, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	pkgs := map[string]*types.Package{}
	for _, p := range paths {
		pkg, err := imp.Import(p)
		if err != nil {
			t.Fatalf("importing %s: %v", p, err)
		}
		pkgs[p] = pkg
	}
	return pkgs
}
