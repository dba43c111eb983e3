package metadatainformer_test

import (
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	clientgometadatainformer "k8s.io/client-go/metadata/metadatainformer"

	"github.com/kreflector/cache/metadatainformer"
)

// Each of client-go's functions has one here taking exactly its
// parameters (the type arguments must unify, so the compiler checks
// them), whose result is client-go's or assignable to it.

func sameFunc[F any](theirs, ours F)                            {}
func sameParams1[A, R, O any](theirs func(A) R, ours func(A) O) {}
func sameParams2[A, B, R, O any](theirs func(A, B) R, ours func(A, B) O) {
}
func sameParams4[A, B, C, D, R, O any](theirs func(A, B, C, D) R, ours func(A, B, C, D) O) {
}
func sameParams2v[A, B, X, Y, R, O any](theirs func(A, B, ...X) R, ours func(A, B, ...Y) O) {
}

var (
	_                                                = sameFunc[func(*string)]
	_ clientgometadatainformer.SharedInformerFactory = metadatainformer.SharedInformerFactory(nil)
	_ clientgometadatainformer.TweakListOptionsFunc  = metadatainformer.TweakListOptionsFunc(nil)
)

func init() {
	sameFunc(clientgometadatainformer.NewFilteredMetadataInformer, metadatainformer.NewFilteredMetadataInformer)
	sameParams2(clientgometadatainformer.NewSharedInformerFactory, metadatainformer.NewSharedInformerFactory)
	sameParams4(clientgometadatainformer.NewFilteredSharedInformerFactory, metadatainformer.NewFilteredSharedInformerFactory)
	sameParams2v(clientgometadatainformer.NewSharedInformerFactoryWithOptions, metadatainformer.NewSharedInformerFactoryWithOptions)
	sameParams1(clientgometadatainformer.WithTransform, metadatainformer.WithTransform)
}

const (
	theirPath = "k8s.io/client-go/metadata/metadatainformer"
	ourPath   = "github.com/kreflector/cache/metadatainformer"
)

// Every exported name of client-go's package, type-checked from the
// module cache, is here with the same kind: a function with the same
// parameters (an option parameter by its shape, client-go's naming its
// unexported factory) and a result assignable to client-go's; a type
// identical to client-go's or, for an interface, implementing it. A
// client-go upgrade that adds a name fails here until this package has
// it (the compile-time checks above cover only the names known today).
func TestEveryClientGoName(t *testing.T) {
	pkgs := load(t, theirPath, ourPath)
	theirs, ours := pkgs[0], pkgs[1]
	for _, name := range theirs.Scope().Names() {
		th := theirs.Scope().Lookup(name)
		if !th.Exported() {
			continue
		}
		o := ours.Scope().Lookup(name)
		if o == nil {
			t.Errorf("%s: missing", name)
			continue
		}
		switch th := th.(type) {
		case *types.Func:
			if msg := compareFunc(th.Type().(*types.Signature), o.Type()); msg != "" {
				t.Errorf("%s: %s", name, msg)
			}
		case *types.TypeName:
			if msg := compareType(th, o); msg != "" {
				t.Errorf("%s: %s", name, msg)
			}
		default:
			t.Errorf("%s: a %T; teach this test to compare it", name, th)
		}
	}
}

func compareFunc(theirs *types.Signature, ours types.Type) string {
	o, ok := ours.(*types.Signature)
	if !ok {
		return "not a func"
	}
	if theirs.Params().Len() != o.Params().Len() || theirs.Variadic() != o.Variadic() || theirs.Results().Len() != o.Results().Len() {
		return "a different number of parameters or results: " + o.String()
	}
	for i := range theirs.Params().Len() {
		if a, b := theirs.Params().At(i).Type(), o.Params().At(i).Type(); !types.Identical(a, b) && shape(a) != shape(b) {
			return "parameter " + b.String() + ", client-go's " + a.String()
		}
	}
	for i := range theirs.Results().Len() {
		if a, b := theirs.Results().At(i).Type(), o.Results().At(i).Type(); !types.AssignableTo(b, a) && shape(a) != shape(b) {
			return "result " + b.String() + " not assignable to client-go's " + a.String()
		}
	}
	return ""
}

func compareType(theirs *types.TypeName, ours types.Object) string {
	o, ok := ours.(*types.TypeName)
	switch {
	case !ok:
		return "not a type"
	case types.Identical(theirs.Type(), o.Type()):
		return ""
	case types.IsInterface(theirs.Type()) && types.Implements(o.Type(), theirs.Type().Underlying().(*types.Interface)):
		return ""
	case shape(theirs.Type().Underlying()) == shape(o.Type().Underlying()):
		return "" // the option type: client-go's names its own factory
	}
	return "ours is " + o.Type().Underlying().String() + ", client-go's " + theirs.Type().Underlying().String()
}

// shape writes t with both packages, and both factories, under one name.
func shape(t types.Type) string {
	s := types.TypeString(t, func(p *types.Package) string {
		if p.Path() == theirPath || p.Path() == ourPath {
			return "metadatainformer"
		}
		return p.Path()
	})
	s = strings.ReplaceAll(s, "metadataSharedInformerFactory", "factory")
	return strings.ReplaceAll(s, "metadatainformer.SharedInformerOption", "func(*metadatainformer.factory) *metadatainformer.factory")
}

// load type-checks paths from the export data the go command writes for
// them, with one importer, so that the types they share are one.
func load(t *testing.T, paths ...string) []*types.Package {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if p, file, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok && file != "" {
			exports[p] = file
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(p string) (io.ReadCloser, error) {
		return os.Open(exports[p])
	})
	var pkgs []*types.Package
	for _, path := range paths {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, pkg)
	}
	return pkgs
}
