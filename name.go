package cache

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgocache "k8s.io/client-go/tools/cache"
)

// ownPackage prefixes the function names of this package's frames.
const ownPackage = "github.com/kreflector/cache."

// callerName names a Reflector after the first caller outside this package
// (this package's own tests count as outside) and outside the Go runtime
// (the entry of a goroutine says nothing about who started it), as
// "dir/file.go:line", or "????" when the stack says nothing useful.
func callerName() string {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		inside := strings.HasPrefix(f.Function, ownPackage) && !strings.HasSuffix(f.File, "_test.go")
		if f.Function != "" && !inside && !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("%s/%s:%d", filepath.Base(filepath.Dir(f.File)), filepath.Base(f.File), f.Line)
		}
		if !more {
			return "????"
		}
	}
}

// informerName is the name a shared informer's Reflector and handler
// metrics take when ReflectorOptions.Name does not give one: the
// Identifier's name and resource if it has a name, else
// "SharedIndexInformer <type>" (with the kind for an Unstructured or
// PartialObjectMetadata example object, whose Go type serves any kind).
func informerName(obj any, id clientgocache.InformerNameAndResource) string {
	if id.Name() != "" {
		gvr := id.GroupVersionResource()
		if gvr.Group != "" {
			return id.Name() + " " + gvr.Resource + "." + gvr.Group
		}
		return id.Name() + " " + gvr.Resource
	}
	name := fmt.Sprintf("SharedIndexInformer %T", obj)
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if gvk := o.GroupVersionKind(); !gvk.Empty() {
			name += " " + gvk.String()
		}
	case *metav1.PartialObjectMetadata:
		if gvk := o.GroupVersionKind(); !gvk.Empty() {
			name += " " + gvk.String()
		}
	}
	return name
}

// runningNames counts, for each name, the running informers that use it,
// so that an informer named by default takes a name no other running
// informer has: metric series are keyed on it, and an informer that stops
// deletes the series of its name.
var runningNames = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// claimName returns the name a starting informer uses and counts it as
// used until releaseName. A given name (ReflectorOptions.Name) is used as
// it is; a default one, if another running informer has it, gets the
// first free suffix " #2", " #3", ...
func claimName(name string, given bool) string {
	runningNames.Lock()
	defer runningNames.Unlock()
	claimed := name
	for i := 2; !given && runningNames.n[claimed] > 0; i++ {
		claimed = fmt.Sprintf("%s #%d", name, i)
	}
	runningNames.n[claimed]++
	return claimed
}

// releaseName is told that an informer using name has stopped.
func releaseName(name string) {
	runningNames.Lock()
	defer runningNames.Unlock()
	if runningNames.n[name]--; runningNames.n[name] <= 0 {
		delete(runningNames.n, name)
	}
}
