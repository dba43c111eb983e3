//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
)

// uidHash is the 64-bit FNV-1a hash of uid, the value kube-apiserver
// places an object by when it shards on object.metadata.uid. It is
// computed here with the standard library, apart from the code under test.
func uidHash(uid types.UID) uint64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, string(uid))
	return h.Sum64()
}

// owns says whether shard s (over UIDs) holds the object with uid.
func owns(s cache.Shard, uid types.UID) bool { return s.ContainsHash(uidHash(uid)) }

// mustReplicaShard is cache.ReplicaShard failing t on error.
func mustReplicaShard(t *testing.T, i, n int) cache.Shard {
	t.Helper()
	s, err := cache.ReplicaShard(i, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// contextLW is a ListerWatcher with the context-taking calls, which the
// Reflectors use when they are there.
type contextLW interface {
	clientgocache.ListerWatcher
	ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error)
	WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// listedItem is one object of a LIST response: its key and resourceVersion.
type listedItem struct {
	key string
	rv  uint64
}

// completedList is a LIST request sequence whose last page has arrived:
// the shardInfo selector every page echoed ("" if a page echoed none, or
// pages disagreed) and all its items.
type completedList struct {
	echo  string
	items []listedItem
}

// observedLW passes calls to the ListerWatcher it wraps and observes the
// answers: it counts the objects decoded (LIST items and watch events
// other than bookmarks) and keeps every LIST sequence that completed.
type observedLW struct {
	inner contextLW
	n     notifier

	decoded atomic.Uint64

	mu sync.Mutex
	// cur is the LIST sequence in progress (its first page asked with no
	// continue token); done those completed, oldest first.
	cur  *completedList
	done []completedList
}

var _ contextLW = &observedLW{}

func observe(inner contextLW) *observedLW { return &observedLW{inner: inner} }

func (l *observedLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := l.inner.ListWithContext(ctx, o)
	if err != nil {
		return obj, err
	}
	lm, lerr := meta.ListAccessor(obj)
	items, ierr := meta.ExtractList(obj)
	if lerr != nil || ierr != nil {
		return obj, err
	}
	l.decoded.Add(uint64(len(items)))
	echo := ""
	if sl, ok := obj.(metav1.ShardedListInterface); ok && sl.GetShardInfo() != nil {
		echo = sl.GetShardInfo().Selector
	}
	l.mu.Lock()
	if o.Continue == "" || l.cur == nil {
		l.cur = &completedList{echo: echo}
	} else if l.cur.echo != echo {
		l.cur.echo = ""
	}
	for _, it := range items {
		m, err := meta.Accessor(it)
		if err != nil {
			continue
		}
		rv, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
		l.cur.items = append(l.cur.items, listedItem{key: m.GetNamespace() + "/" + m.GetName(), rv: rv})
	}
	finished := lm.GetContinue() == ""
	if finished {
		l.done = append(l.done, *l.cur)
		l.cur = nil
	}
	l.mu.Unlock()
	if finished {
		l.n.notify()
	}
	return obj, nil
}

func (l *observedLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.inner.WatchWithContext(ctx, o)
	if err != nil {
		return w, err
	}
	return newForwardWatch(w, func(ev watch.Event) {
		if ev.Type != watch.Bookmark {
			l.decoded.Add(1)
		}
	}), nil
}

// List and Watch are the calls without a context; the Reflectors do not
// use them.
func (l *observedLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.TODO(), o)
}

func (l *observedLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.TODO(), o)
}

// completedSince returns the first LIST sequence completed at or after
// position from whose every page echoed selector, waiting until ctx ends.
func (l *observedLW) completedSince(ctx context.Context, from int, selector string) (completedList, error) {
	var found completedList
	err := l.n.waitUntil(ctx, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, c := range l.done[min(from, len(l.done)):] {
			if c.echo == selector {
				found = c
				return true
			}
		}
		return false
	})
	if err != nil {
		return found, fmt.Errorf("no complete LIST echoing %q: %w", selector, err)
	}
	return found, nil
}

// mark is the position of the next LIST sequence to complete.
func (l *observedLW) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.done)
}

// forwardWatch passes a watch's events on through a callback, closing its
// channel when the watch it wraps closes; Stop stops both.
type forwardWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newForwardWatch(inner watch.Interface, seen func(watch.Event)) *forwardWatch {
	w := &forwardWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		defer inner.Stop()
		for {
			select {
			case <-w.stop:
				return
			case ev, ok := <-inner.ResultChan():
				if !ok {
					return
				}
				seen(ev)
				select {
				case w.out <- ev:
				case <-w.stop:
					return
				}
			}
		}
	}()
	return w
}

func (w *forwardWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *forwardWatch) ResultChan() <-chan watch.Event { return w.out }

// byteCounter counts the bytes of every response body read through the
// transports it wraps (rest.Config.WrapTransport).
type byteCounter struct{ n atomic.Int64 }

// config returns a copy of cfg whose responses are counted by c.
func (c *byteCounter) config(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, c} }
	return out
}

type countingTransport struct {
	rt http.RoundTripper
	c  *byteCounter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err == nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, c: t.c}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	c *byteCounter
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.n.Add(int64(n))
	return n, err
}

// shardedSecretList LISTs the Secrets in ns at RV "" (a consistent read),
// with shard's selector unless shard is the zero Shard, and returns the
// items; it fails t unless a sharded LIST echoes the selector.
func shardedSecretList(t *testing.T, cs kubernetes.Interface, ns string, shard cache.Shard) []interface{} {
	t.Helper()
	l, err := cs.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{ShardSelector: shard.String()})
	if err != nil {
		t.Fatal(err)
	}
	if !shard.IsZero() && (l.ShardInfo == nil || l.ShardInfo.Selector != shard.String()) {
		t.Fatalf("sharded LIST of %s echoed %+v, want selector %q", ns, l.ShardInfo, shard.String())
	}
	out := make([]interface{}, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// marker is an object written to bring one shard's replicas up to date.
type marker struct {
	key string
	rv  uint64
}

// shardMarkers creates Secrets marker-0, marker-1, … in ns until each of
// shards holds at least one, and returns, per shard, the newest marker in
// it. Once a replica of shard i has been told of its marker, it has been
// told of every change in its shard made before shardMarkers was called:
// the changes after that marker are all markers of other shards.
func shardMarkers(t *testing.T, cs kubernetes.Interface, ns string, shards []cache.Shard) []marker {
	t.Helper()
	out := make([]marker, len(shards))
	missing := len(shards)
	for k := 0; missing > 0; k++ {
		if k == 1000 {
			t.Fatalf("1000 markers and %d of %d shards still hold none", missing, len(shards))
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "marker-" + strconv.Itoa(k)}}
		s, err := cs.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv, err := strconv.ParseUint(s.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		for i, sh := range shards {
			if owns(sh, s.UID) {
				if out[i].key == "" {
					missing--
				}
				out[i] = marker{key: ns + "/" + s.Name, rv: rv}
			}
		}
	}
	return out
}
