//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/internal/podgen"
)

// coldPods is how many realistic Pods the cold-start comparison syncs.
const coldPods = 2000

// TestColdStartMatchesClientGo syncs coldPods realistic Pods (podgen's,
// status included) from the real kube-apiserver from scratch, once with
// client-go's Reflector on client-go's ListWatch and once with ours on
// ours, which decodes the items on every core and requests pages ahead,
// then once more with ours lean (ShareStrings, ShareMaps,
// DropManagedFields, done on the decoding goroutines): over JSON and
// protobuf, by WatchList, by a LIST at RV "0" (answered whole by the watch
// cache, whatever the limit) and by a paginated LIST (RV "", 500 a page).
// In each case the calls to the ListerWatcher are those the mode names
// and the same for all three; ours used every page it requested ahead
// (so the server got exactly those calls); ours holds Pods deep-equal to
// client-go's, as many as a LIST of the server has, and ours lean the
// same but for managedFields. The sync times are logged side by side
// (figures, not checked: hack/e2e.sh runs the suite under the race
// detector, which slows both implementations, not equally). It runs
// alone, with the sequential tests: its 18 syncs of realistic Pods would
// take the two cores from the parallel tests, and theirs would blur its
// times.
//
// Compression is kube-apiserver's default and the client's: each response
// the server compressed is logged as such (wireLog), and every
// implementation must have made the same requests and got the same
// responses compressed, some of them at least for a LIST (kube-apiserver
// compresses bodies over 128 KiB); one more case turns compression off in
// the client (rest.Config.DisableCompression), and then nothing comes
// compressed.
func TestColdStartMatchesClientGo(t *testing.T) {
	ns := coldNamespace(t, client(t, testCluster.admin))
	for _, enc := range []string{"json", "protobuf"} {
		cfg := encodingConfig(testCluster.admin, enc)
		for _, mode := range []string{"watchlist", "list-rv0", "paginated"} {
			t.Run(enc+"/"+mode, func(t *testing.T) { coldCase(t, cfg, ns, mode) })
		}
	}
	t.Run("protobuf/paginated/uncompressed", func(t *testing.T) {
		cfg := encodingConfig(testCluster.admin, "protobuf")
		cfg.DisableCompression = true
		coldCase(t, cfg, ns, "paginated")
	})
}

// coldCase is one case of TestColdStartMatchesClientGo: the three syncs
// of ns in mode through clients of cfg, and every check the test names.
func coldCase(t *testing.T, cfg *rest.Config, ns, mode string) {
	wires := []*wireLog{{}, {}, {}}
	clients := make([]*kubernetes.Clientset, len(wires))
	for i, w := range wires {
		clients[i] = client(t, w.config(cfg))
	}
	theirs := syncUntilWatching(t, coldLW(clientgocache.NewListWatchFromClient(clients[0].CoreV1().RESTClient(), "pods", ns, fields.Everything()), mode),
		func(lw cache.ListerWatcher, s cache.ReflectorStore) reflector {
			return clientgocache.NewReflectorWithOptions(lw, &corev1.Pod{}, s, clientgocache.ReflectorOptions{Name: "client-go"})
		})
	ourSync := func(cs *kubernetes.Clientset, o cache.ReflectorOptions) syncResult {
		return syncUntilWatching(t, coldLW(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", ns, fields.Everything()), mode),
			func(lw cache.ListerWatcher, s cache.ReflectorStore) reflector {
				return cache.NewReflectorWithOptions(lw, &corev1.Pod{}, s, o)
			})
	}
	ours := ourSync(clients[1], cache.ReflectorOptions{Name: "ours"})
	lean := ourSync(clients[2], cache.ReflectorOptions{Name: "ours-lean", ShareStrings: true, ShareMaps: true, DropManagedFields: true})
	assertSameWire(t, mode, cfg.DisableCompression, wires)
	t.Logf("%d Pods, %s: client-go synced in %v, ours in %v (%.2fx), ours lean in %v (%.2fx); requests:\n  %s",
		len(ours.objs), mode, theirs.took.Round(time.Millisecond),
		ours.took.Round(time.Millisecond), ours.took.Seconds()/theirs.took.Seconds(),
		lean.took.Round(time.Millisecond), lean.took.Seconds()/theirs.took.Seconds(), strings.Join(ours.calls, "\n  "))
	for _, r := range []struct {
		name  string
		calls []string
	}{{"ours", ours.calls}, {"ours lean", lean.calls}} {
		if !slices.Equal(r.calls, theirs.calls) {
			t.Errorf("requests differ\nclient-go:\n  %s\n%s:\n  %s", strings.Join(theirs.calls, "\n  "), r.name, strings.Join(r.calls, "\n  "))
		}
	}
	assertColdCalls(t, mode, theirs.calls)
	for _, r := range []syncResult{ours, lean} {
		assertInitialSync(t, r.stats, mode == "watchlist", coldPods)
		if r.stats.ListPagesUnused != 0 {
			t.Errorf("ours requested %d pages ahead that it did not use", r.stats.ListPagesUnused)
		}
	}
	server, err := clients[0].CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(theirs.objs) != len(server.Items) {
		t.Fatalf("client-go's store holds %d Pods, the server %d", len(theirs.objs), len(server.Items))
	}
	assertSamePods(t, "ours", theirs.objs, ours.objs, false)
	assertSamePods(t, "ours lean", theirs.objs, lean.objs, true)
}

// assertColdCalls fails t unless calls are what mode makes: a WatchList
// (one WATCH asking for the initial events, no LIST), one LIST at RV "0",
// or a LIST continued page after page.
func assertColdCalls(t *testing.T, mode string, calls []string) {
	t.Helper()
	lists, continued := 0, 0
	for _, c := range calls {
		if strings.HasPrefix(c, "LIST ") {
			lists++
			if strings.Contains(c, "continue=true") {
				continued++
			}
		}
	}
	var ok bool
	switch mode {
	case "watchlist":
		ok = len(calls) > 0 && strings.HasPrefix(calls[0], "WATCH ") && strings.Contains(calls[0], "initial=true") && lists == 0
	case "list-rv0":
		ok = lists == 1 && strings.Contains(calls[0], "LIST rv=N ")
	case "paginated":
		ok = lists == (coldPods+499)/500 && continued == lists-1
	}
	if !ok {
		t.Errorf("%s: the calls are not those of the mode:\n  %s", mode, strings.Join(calls, "\n  "))
	}
}

// encodingConfig is cfg asking for enc: "json" (what a config with no
// content type gets) or "protobuf" (what a clientset built for Kubernetes'
// own types asks for when told to prefer it, as controllers usually are).
func encodingConfig(cfg *rest.Config, enc string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if enc == "protobuf" {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	return cfg
}

// coldLW wraps lw for mode: it records the calls, refuses WatchList
// unless mode is "watchlist", and in mode "paginated" asks for a first
// LIST at RV "" where the Reflector asks for RV "0" (see pagingLW).
func coldLW(lw cache.ListerWatcherWithContext, mode string) *recordingLW {
	if mode == "paginated" {
		lw = consistentLists{lw}
	}
	return &recordingLW{lw: lw, noStream: mode != "watchlist", watched: make(chan struct{})}
}

// consistentLists turns a first LIST at RV "0" into one at RV "": a
// consistent read, which the server paginates.
type consistentLists struct{ cache.ListerWatcherWithContext }

// ListWithContext lists at RV "" where a first LIST asks for RV "0", and
// as asked otherwise.
func (l consistentLists) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if o.ResourceVersion == "0" && o.Continue == "" {
		o.ResourceVersion = ""
	}
	return l.ListerWatcherWithContext.ListWithContext(ctx, o)
}

// syncResult is one sync from scratch: the calls made until the watch was open,
// what the store held then, the time from Run to the end of the initial
// sync, and for our Reflector its Stats then.
type syncResult struct {
	calls []string
	objs  []interface{}
	took  time.Duration
	stats cache.Stats
}

// coldSync runs the Reflector newReflector makes on lw until it has
// synced and opened its watch, then stops it.
func syncUntilWatching(t *testing.T, lw *recordingLW, newReflector func(cache.ListerWatcher, cache.ReflectorStore) reflector) syncResult {
	t.Helper()
	s := cache.NewStore(cache.MetaNamespaceKeyFunc)
	store := track(s)
	r := newReflector(lw, store)
	stop, done := make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() { r.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()
	ctx, cancel := context.WithTimeout(t.Context(), minute)
	defer cancel()
	err := store.n.waitUntil(ctx, func() bool {
		_, listRV, _ := store.state()
		return listRV != ""
	})
	if err != nil {
		t.Fatalf("not synced within a minute: %v", err)
	}
	took := time.Since(start)
	select {
	case <-lw.watched:
	case <-ctx.Done():
		t.Fatalf("no watch opened within a minute")
	}
	res := syncResult{objs: s.List(), took: took}
	if ours, ok := r.(*cache.Reflector); ok {
		// A sync's figures are counted once the store's Replace returns;
		// a WatchList's watch was opened before it.
		for !ours.HasSynced() {
			if ctx.Err() != nil {
				t.Fatalf("the Reflector did not count its sync within a minute")
			}
			time.Sleep(time.Millisecond)
		}
		res.stats = ours.Stats()
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	res.calls = slices.Clone(lw.calls)
	return res
}

// assertSamePods fails t unless got (the store named name) holds, key for
// key, Pods deep-equal (reflect.DeepEqual: the same Go values, not only
// equal JSON) to those client-go's holds, or, with noManagedFields, to
// those with their managedFields dropped.
func assertSamePods(t *testing.T, name string, theirs, got []interface{}, noManagedFields bool) {
	t.Helper()
	byKey := make(map[string]*corev1.Pod, len(theirs))
	for _, o := range theirs {
		p := o.(*corev1.Pod)
		if noManagedFields {
			p = p.DeepCopy()
			p.ManagedFields = nil
		}
		byKey[p.Namespace+"/"+p.Name] = p
	}
	if len(got) != len(theirs) {
		t.Errorf("%s holds %d Pods, client-go's store %d", name, len(got), len(theirs))
	}
	var differ []string
	for _, o := range got {
		p := o.(*corev1.Pod)
		if want, ok := byKey[p.Namespace+"/"+p.Name]; !ok || !reflect.DeepEqual(want, p) {
			differ = append(differ, fmt.Sprintf("%s/%s (in client-go's store: %v)", p.Namespace, p.Name, ok))
		}
	}
	if len(differ) > 0 {
		t.Errorf("%d Pods of %s differ from client-go's; the first:\n  %s", len(differ), name, strings.Join(differ[:min(maxDiffs, len(differ))], "\n  "))
	}
}

// coldNamespace makes a namespace of coldPods realistic Pods: its
// ServiceAccount "default", then each Pod created and given its status, 16
// at a time.
func coldNamespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns := namespace(t, cs)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ServiceAccount %s/default: %v", ns, err)
	}
	if err := inParallel(coldPods, 16, func(i int) error { return createRealisticPod(t.Context(), cs, ns, i) }); err != nil {
		t.Fatalf("namespace of %d Pods: %v", coldPods, err)
	}
	return ns
}

// createRealisticPod creates podgen's Pod i in ns (its server-set fields
// cleared, its ServiceAccount "default") and sets its status.
func createRealisticPod(ctx context.Context, cs kubernetes.Interface, ns string, i int) error {
	p := podgen.Pod(i, 1)
	status := p.Status
	p.Namespace, p.ResourceVersion, p.UID = ns, "", ""
	p.CreationTimestamp, p.ManagedFields, p.Status = metav1.Time{}, nil, corev1.PodStatus{}
	p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "default", "default"
	created, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating Pod %s: %w", p.Name, err)
	}
	created.Status = status
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting Pod %s's status: %w", p.Name, err)
	}
	return nil
}

// wireLog records what a client's requests asked for and how each
// response came: "METHOD path Accept -> status Content-Type, gzip|plain". A wrapped
// transport sees a response after net/http has inflated it; Uncompressed
// says the server had compressed it.
type wireLog struct {
	mu    sync.Mutex
	lines []string
}

// config is cfg with its transport wrapped to log into w.
func (w *wireLog) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return wireLogging{rt, w} }
	return cfg
}

// snapshot is a copy of the lines, and how many say gzip.
func (w *wireLog) snapshot() ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	gz := 0
	for _, l := range w.lines {
		if strings.HasSuffix(l, ", gzip") {
			gz++
		}
	}
	return slices.Clone(w.lines), gz
}

type wireLogging struct {
	rt  http.RoundTripper
	log *wireLog
}

func (t wireLogging) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	line := fmt.Sprintf("%s %s Accept=%q Accept-Encoding=%q -> ", req.Method, req.URL.Path, req.Header.Get("Accept"), req.Header.Get("Accept-Encoding"))
	switch {
	case err != nil:
		line += "error"
	case resp.Uncompressed:
		line += fmt.Sprintf("%d %s, gzip", resp.StatusCode, resp.Header.Get("Content-Type"))
	default:
		line += fmt.Sprintf("%d %s, plain", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	t.log.mu.Lock()
	t.log.lines = append(t.log.lines, line)
	t.log.mu.Unlock()
	return resp, err
}

// assertSameWire fails t unless the three syncs' clients (client-go's,
// ours, ours lean) made the same requests with the same headers and got
// the same responses compressed; some compressed, for a LIST, unless the
// client turned compression off, and none then.
func assertSameWire(t *testing.T, mode string, disabled bool, wires []*wireLog) {
	t.Helper()
	theirs, gz := wires[0].snapshot()
	for i, name := range []string{"ours", "ours lean"} {
		got, _ := wires[i+1].snapshot()
		if !slices.Equal(got, theirs) {
			t.Errorf("%s's requests or responses differ on the wire\nclient-go:\n  %s\n%s:\n  %s", name, strings.Join(theirs, "\n  "), name, strings.Join(got, "\n  "))
		}
	}
	switch {
	case disabled && gz > 0:
		t.Errorf("compression off in the client, and %d responses came compressed:\n  %s", gz, strings.Join(theirs, "\n  "))
	case !disabled && mode != "watchlist" && gz == 0:
		t.Errorf("no LIST response came compressed, as kube-apiserver compresses by default:\n  %s", strings.Join(theirs, "\n  "))
	}
	t.Logf("on the wire (%d of %d responses compressed):\n  %s", gz, len(theirs), strings.Join(theirs, "\n  "))
}
