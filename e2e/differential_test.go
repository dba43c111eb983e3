//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// recordingLW records the options of every call it passes on; RVs and
// continue tokens are masked, since the server moves on between runs.
type recordingLW struct {
	lw       cache.ListerWatcherWithContext
	noStream bool
	mu       sync.Mutex
	calls    []string
	watched  chan struct{}
	once     sync.Once
}

var digits = regexp.MustCompile(`[0-9]+`)

func (l *recordingLW) record(verb string, o metav1.ListOptions) {
	s := fmt.Sprintf("%s rv=%s match=%s limit=%d continue=%v bookmarks=%v initial=%v timeout=%v",
		verb, digits.ReplaceAllString(o.ResourceVersion, "N"), o.ResourceVersionMatch, o.Limit, o.Continue != "",
		o.AllowWatchBookmarks, o.SendInitialEvents != nil && *o.SendInitialEvents, o.TimeoutSeconds != nil)
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
}

func (l *recordingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

func (l *recordingLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

func (l *recordingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l.record("LIST", o)
	return l.lw.ListWithContext(ctx, o)
}

func (l *recordingLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	l.record("WATCH", o)
	w, err := l.lw.WatchWithContext(ctx, o)
	if err == nil {
		l.once.Do(func() { close(l.watched) })
	}
	return w, err
}

func (l *recordingLW) IsWatchListSemanticsUnSupported() bool { return l.noStream }

// reflector is what the test needs of client-go's Reflector and ours.
type reflector interface {
	Run(stopCh <-chan struct{})
	LastSyncResourceVersion() string
}

// TestSameRequestsAsClientGo runs client-go's Reflector and ours against
// the same namespace of the real server and compares the requests they
// make and what they store.
func TestSameRequestsAsClientGo(t *testing.T) {
	t.Parallel()
	cs := client(t, testCluster.admin)
	ns := namespace(t, cs)
	mustCreateConfigMaps(t, cs, ns, 1100)
	want, err := serverList(t.Context(), cs, "configmaps", ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		noStream bool
		pageSize int64
	}{{true, 0}, {true, 100}, {false, 0}} {
		noStream := tc.noStream
		t.Run(fmt.Sprintf("listOnly=%v,pageSize=%d", tc.noStream, tc.pageSize), func(t *testing.T) {
			run := func(newReflector func(cache.ListerWatcher, cache.ReflectorStore) reflector) ([]string, []interface{}) {
				return runUntilWatching(t, cs, ns, noStream, newReflector)
			}
			theirs, theirStore := run(func(lw cache.ListerWatcher, s cache.ReflectorStore) reflector {
				r := clientgocache.NewReflector(lw, &corev1.ConfigMap{}, s, 0)
				r.WatchListPageSize = tc.pageSize
				return r
			})
			ours, ourStore := run(func(lw cache.ListerWatcher, s cache.ReflectorStore) reflector {
				r := cache.NewReflector(lw, &corev1.ConfigMap{}, s, 0)
				r.WatchListPageSize = tc.pageSize
				return r
			})
			t.Logf("requests:\n  %s", strings.Join(ours, "\n  "))
			if !slices.Equal(ours, theirs) {
				t.Errorf("requests differ\nclient-go:\n  %s\nours:\n  %s", strings.Join(theirs, "\n  "), strings.Join(ours, "\n  "))
			}
			assertSame(t, "the server", want, "our store", ourStore)
			assertSame(t, "the server", want, "client-go's store", theirStore)
		})
	}
}

// runUntilWatching runs the Reflector newReflector makes on the ConfigMaps
// in ns until it has synced and opened its watch, stops it, and returns the
// requests it made and what it stored.
func runUntilWatching(t *testing.T, cs *kubernetes.Clientset, ns string, noStream bool, newReflector func(cache.ListerWatcher, cache.ReflectorStore) reflector) ([]string, []interface{}) {
	t.Helper()
	r := syncUntilWatching(t, &recordingLW{lw: configMapsLW(cs, ns), noStream: noStream, watched: make(chan struct{})}, newReflector)
	return r.calls, r.objs
}

// TestWatchExampleOnACluster runs examples/watch read-only on the cluster,
// as a user would with --kubeconfig. The ConfigMaps of every namespace are
// listed, as many as the other tests have left by then, so the sync gets
// the example's own minute, and the watching after it 3 s.
func TestWatchExampleOnACluster(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(t.Context(), "go", "run", "../examples/watch", "--kubeconfig", testCluster.kubeconfig, "--duration", "3s").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "objects=") {
		t.Fatalf("examples/watch --kubeconfig: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
