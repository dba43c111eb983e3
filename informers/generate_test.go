package informers_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/informers"
	"github.com/kreflector/cache/informers/internal/gen"
)

// The checked-in generated files (zz_generated.go here and in every
// package under informers/, zz_generated_test.go) are what the generator
// writes from the client-go this module requires, and there is no other
// (CI runs this test; regenerate with `go generate ./informers`).
func TestGeneratedFileIsUpToDate(t *testing.T) {
	dir, err := gen.ClientGoDir()
	if err != nil {
		t.Fatal(err)
	}
	want, err := gen.Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for rel, src := range want {
		got, err := os.ReadFile(filepath.FromSlash(rel))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			bad = append(bad, rel+": missing")
		case err != nil:
			t.Fatal(err)
		case !bytes.Equal(got, src):
			bad = append(bad, rel+": differs from the generator's output")
		}
	}
	stale, err := gen.Stale(".", want)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range stale {
		bad = append(bad, rel+": generated, but the generator no longer writes it")
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Fatalf("run `go generate ./informers`:\n%s", strings.Join(bad, "\n"))
	}
	t.Logf("%d generated files", len(want))
}

// accessors calls every group, version and resource accessor of f (found
// by reflection on client-go's interfaces) and returns the resources.
func accessors(t *testing.T, f informers.SharedInformerFactory) map[string]reflect.Value {
	t.Helper()
	out := map[string]reflect.Value{}
	groups := children(reflect.ValueOf(f), "Interface")
	for gname, g := range groups {
		for vname, v := range children(g, "Interface") {
			for rname, r := range children(v, "") {
				out[gname+"."+vname+"."+rname] = r
			}
		}
	}
	return out
}

// children calls each method of v's static interface type that takes no
// argument and returns one interface named like result ("" for any).
func children(v reflect.Value, result string) map[string]reflect.Value {
	out := map[string]reflect.Value{}
	typ := v.Type()
	if typ.Kind() == reflect.Pointer {
		typ = reflect.TypeFor[informers.SharedInformerFactory]()
		v = v.Convert(typ)
	}
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		if m.Type.NumIn() != 0 || m.Type.NumOut() != 1 || m.Type.Out(0).Kind() != reflect.Interface {
			continue
		}
		if result != "" && m.Type.Out(0).Name() != result {
			continue
		}
		out[m.Name] = v.Method(i).Call(nil)[0]
	}
	return out
}

// Every typed accessor hands out this module's informer: Informer and
// TypedInformer answer InformerHealthReporter, Lister is over its indexer.
func TestEveryAccessorServesOurInformer(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	all := accessors(t, f)
	if len(all) < 140 {
		t.Fatalf("found %d resource accessors, want every built-in one (147 in client-go v0.37.2)", len(all))
	}
	for name, r := range all {
		inf := r.MethodByName("Informer").Call(nil)[0].Interface().(clientgocache.SharedIndexInformer)
		if _, ok := inf.(cache.InformerHealthReporter); !ok {
			t.Errorf("%s.Informer() is %T, not this module's", name, inf)
		}
		typed := r.MethodByName("TypedInformer").Call(nil)[0].Interface()
		if _, ok := typed.(cache.InformerHealthReporter); !ok {
			t.Errorf("%s.TypedInformer() is %T, which does not report health", name, typed)
		}
		if lister := r.MethodByName("Lister").Call(nil)[0]; lister.IsNil() {
			t.Errorf("%s.Lister() is nil", name)
		}
	}
	t.Logf("%d resources", len(all))
}
