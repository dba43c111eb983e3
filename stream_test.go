package cache

import (
	"reflect"
	"strings"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/cachetest"
)

// valueObject is a runtime.Object held by value, not by pointer.
type valueObject struct{ n int }

func (valueObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (o valueObject) DeepCopyObject() runtime.Object { return o }

// emptyObject is a zero-size runtime.Object held by value.
type emptyObject struct{}

func (emptyObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (o emptyObject) DeepCopyObject() runtime.Object { return o }

// isNilObject reads the interface's data word; this pins its answers to
// what reflect says for every shape an object can have.
func TestIsNilObject(t *testing.T) {
	for name, tc := range map[string]struct {
		obj  runtime.Object
		want bool
	}{
		"nil interface":          {nil, true},
		"typed nil pointer":      {(*corev1.ConfigMap)(nil), true},
		"typed nil unstructured": {(*unstructured.Unstructured)(nil), true},
		"pointer":                {&corev1.ConfigMap{}, false},
		"unstructured":           {&unstructured.Unstructured{}, false},
		"value":                  {valueObject{n: 1}, false},
		"zero value":             {valueObject{}, false},
		"zero-size value":        {emptyObject{}, false},
	} {
		if got := isNilObject(tc.obj); got != tc.want {
			t.Errorf("%s: isNilObject = %v, want %v", name, got, tc.want)
		}
		v := reflect.ValueOf(tc.obj)
		if byReflect := !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil(); byReflect != tc.want {
			t.Errorf("%s: reflect says nil = %v, the table %v", name, byReflect, tc.want)
		}
	}
}

// rewritingStore is a store (with a ResourceVersionUpdater) that, like a
// handler of client-go's fake source, writes into the objects it is handed:
// it sets their resourceVersion to "999".
type rewritingStore struct {
	*cachetest.RecordingStore
}

func (s *rewritingStore) rewrite(obj interface{}) interface{} {
	obj.(metav1.Object).SetResourceVersion("999")
	return obj
}

func (s *rewritingStore) Add(obj interface{}) error { return s.RecordingStore.Add(s.rewrite(obj)) }
func (s *rewritingStore) Update(obj interface{}) error {
	return s.RecordingStore.Update(s.rewrite(obj))
}
func (s *rewritingStore) Delete(obj interface{}) error {
	return s.RecordingStore.Delete(s.rewrite(obj))
}

// An event's resourceVersion is read before the store has its object:
// once handed over, the object is the store's (and its handlers') to
// change, and a read after races with them. The resume position and the
// store's UpdateResourceVersion get the event's resourceVersion, not what
// the store wrote.
func TestEventResourceVersionIsReadBeforeTheStoreHasTheObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{
			{events: []watch.Event{ev(watch.Modified, cm("a", "11")), ev(watch.Added, cm("b", "12")), ev(watch.Deleted, cm("a", "13"))}, hang: true},
		})
		store := &rewritingStore{cachetest.NewRecordingStore(nil)}
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, noWatchList)
		runUntilDrained(t, r, lw)
		if got := r.LastSyncResourceVersion(); got != "13" {
			t.Errorf("LastSyncResourceVersion %q, want 13", got)
		}
		var rvs []string
		for _, c := range store.CallStrings() {
			if strings.HasPrefix(c, "UpdateResourceVersion ") {
				rvs = append(rvs, c)
			}
		}
		if got := strings.Join(rvs, ", "); got != "UpdateResourceVersion rv=11, UpdateResourceVersion rv=12, UpdateResourceVersion rv=13" {
			t.Errorf("UpdateResourceVersion calls: %s", got)
		}
	})
}
