//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// gatedLW passes calls to the ListWatch it wraps; interrupt ends the open
// watch and holds the next Watch calls until released.
type gatedLW struct {
	*cache.ListWatch

	mu      sync.Mutex
	current *cutWatch
	// gate, while not nil, holds Watch calls until it is closed; waiting
	// is closed when the first call arrives at it.
	gate, waiting chan struct{}
	arrived       bool
}

// WatchWithContext waits at the gate, if one is up, then opens the watch.
func (g *gatedLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	g.mu.Lock()
	gate := g.gate
	if gate != nil && !g.arrived {
		g.arrived = true
		close(g.waiting)
	}
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	w, err := g.ListWatch.WatchWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	cw := newCutWatch(w)
	g.mu.Lock()
	g.current = cw
	g.mu.Unlock()
	return cw, nil
}

// Watch is WatchWithContext; the Reflector never calls it.
func (g *gatedLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return g.WatchWithContext(context.TODO(), o)
}

// interrupt raises the gate and ends the open watch. It returns a channel
// closed once a Watch call waits at the gate, and release, which lowers
// the gate (it may be called more than once).
func (g *gatedLW) interrupt() (waiting <-chan struct{}, release func()) {
	g.mu.Lock()
	g.gate, g.waiting, g.arrived = make(chan struct{}), make(chan struct{}), false
	gate, w := g.gate, g.current
	waiting = g.waiting
	g.mu.Unlock()
	if w != nil {
		w.Stop()
	}
	var once sync.Once
	return waiting, func() {
		once.Do(func() {
			g.mu.Lock()
			g.gate = nil
			g.mu.Unlock()
			close(gate)
		})
	}
}

// holdNextWatch interrupts the open watch and waits, for up to a minute,
// until the Reflector's next Watch call is held at the gate; it returns
// release (see interrupt).
func (g *gatedLW) holdNextWatch(t *testing.T) (release func()) {
	t.Helper()
	waiting, release := g.interrupt()
	select {
	case <-waiting:
	case <-time.After(minute):
		release()
		t.Fatal("the Reflector did not watch again after its watch was stopped")
	}
	return release
}

// cutWatch passes on the events of a watch until it is stopped (by its
// user or by interrupt); then it stops the watch and closes its result
// channel, as a server closing the watch would. Stopping client-go's
// watch directly would not do: its decoder may then report the closed
// connection as an error event, which the Reflector answers by relisting.
type cutWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

// newCutWatch starts passing inner's events on; the goroutine doing so
// ends, stopping inner, once the cutWatch is stopped or inner closes.
func newCutWatch(inner watch.Interface) *cutWatch {
	w := &cutWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.forward()
	return w
}

func (w *cutWatch) forward() {
	defer close(w.out)
	defer w.inner.Stop()
	in := w.inner.ResultChan()
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-in:
			if !ok {
				return
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		}
	}
}

// Stop ends the watch; it may be called more than once.
func (w *cutWatch) Stop() { w.once.Do(func() { close(w.stop) }) }

// ResultChan is closed once the watch has ended.
func (w *cutWatch) ResultChan() <-chan watch.Event { return w.out }

// writeSecret creates or updates Secret name in ns with value and returns
// its resourceVersion.
func writeSecret(t *testing.T, cs kubernetes.Interface, ns, name, value string) string {
	t.Helper()
	api := cs.CoreV1().Secrets(ns)
	s, err := api.Get(t.Context(), name, metav1.GetOptions{})
	if err == nil {
		s.Data = map[string][]byte{"v": []byte(value)}
		s, err = api.Update(t.Context(), s, metav1.UpdateOptions{})
	} else {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"v": []byte(value)}}
		s, err = api.Create(t.Context(), s, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("writing secret %s/%s: %v", ns, name, err)
	}
	return s.ResourceVersion
}

// churnSecrets updates secret-0 … secret-(n-1), deletes every third, and
// creates n new ones, then returns the resourceVersion of a last write.
func churnSecrets(t *testing.T, cs kubernetes.Interface, ns string, n int) string {
	t.Helper()
	for i := range n {
		writeSecret(t, cs, ns, "secret-"+strconv.Itoa(i), "updated")
		if i%3 == 0 {
			if err := cs.CoreV1().Secrets(ns).Delete(t.Context(), "secret-"+strconv.Itoa(i), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		writeSecret(t, cs, ns, "new-"+strconv.Itoa(i), "created")
	}
	return writeSecret(t, cs, ns, "marker", "churned")
}

// etcdCall POSTs in as JSON to path on etcd's gRPC gateway and decodes
// the answer into out.
func (c *cluster) etcdCall(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.env["ETCD_URL"]+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("etcd %s: reading the answer: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, answer)
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("etcd %s: decoding %s: %w", path, answer, err)
	}
	return nil
}

// etcdHeader is the header of every etcd answer; int64s come as strings.
type etcdHeader struct {
	Header struct {
		Revision string `json:"revision"`
	} `json:"header"`
}

// compactEtcd compacts etcd at its current revision, physically, and
// returns that revision.
func (c *cluster) compactEtcd(t *testing.T) int64 {
	t.Helper()
	var cur etcdHeader
	key := base64.StdEncoding.EncodeToString([]byte("/registry/"))
	if err := c.etcdCall(t.Context(), "/v3/kv/range", map[string]any{"key": key, "limit": 1}, &cur); err != nil {
		t.Fatal(err)
	}
	rev, err := strconv.ParseInt(cur.Header.Revision, 10, 64)
	if err != nil {
		t.Fatalf("etcd revision %q: %v", cur.Header.Revision, err)
	}
	var done etcdHeader
	in := map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}
	if err := c.etcdCall(t.Context(), "/v3/kv/compaction", in, &done); err != nil {
		t.Fatal(err)
	}
	return rev
}

// TestCompactionExpiresTheWatch makes the Reflector's resourceVersion
// expire: with its watch stopped and the next one held back, Secrets
// change and etcd is compacted past them. kube-apiserver runs with
// --watch-cache-sizes=secrets#0, so the held watch goes straight to etcd
// at the compacted revision and is answered 410 Expired; the Reflector
// relists and converges.
func TestCompactionExpiresTheWatch(t *testing.T) {
	cs := client(t, testCluster.admin)
	ns := namespace(t, cs)
	for i := range 20 {
		writeSecret(t, cs, ns, "secret-"+strconv.Itoa(i), "initial")
	}
	lw := &gatedLW{ListWatch: cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "secrets", ns, fields.Everything())}
	s := cache.NewStore(cache.MetaNamespaceKeyFunc)
	store := track(s)
	r := cache.NewReflectorWithOptions(lw, &corev1.Secret{}, store, cache.ReflectorOptions{Name: "compaction", UseWatchList: ptr.To(false), Backoff: quickBackoff()})
	runReflector(t, r)
	mustSync(t, r)
	// One event through the watch, so that stopping it is an ordinary
	// close the Reflector resumes from, not a very short watch.
	mustReachRV(t, store, writeSecret(t, cs, ns, "marker", "watching"))

	release := lw.holdNextWatch(t)
	defer release()
	at := r.LastSyncResourceVersion()
	last := churnSecrets(t, cs, ns, 20)
	rev := testCluster.compactEtcd(t)
	t.Logf("Reflector held at RV %s; secrets changed up to RV %s; etcd compacted at revision %d", at, last, rev)
	release()

	mustReachRV(t, store, last)
	st := r.Stats()
	t.Logf("watch ends %v; lists %v", st.WatchEnds, st.Lists)
	if st.WatchEnds[cache.WatchExpired] != 1 || st.Lists[cache.ListExpired] != 1 || st.Lists[cache.ListWatchError] != 0 {
		t.Errorf("want exactly one expired watch and one relist for it: watch ends %v, lists %v", st.WatchEnds, st.Lists)
	}
	assertMatchesServer(t, cs, "secrets", ns, "store", s.List())
}
