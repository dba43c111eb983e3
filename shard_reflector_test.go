package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/cachetest"
)

// shardedCM is a ConfigMap whose UID hashes into s (in) or out of it.
func shardedCM(t testing.TB, s Shard, name, rv string, in bool) *corev1.ConfigMap {
	t.Helper()
	for i := 0; ; i++ {
		c := cm(name, rv)
		c.UID = types.UID(fmt.Sprintf("uid-%s-%d", name, i))
		if ok, _ := s.Contains(c); ok == in {
			return c
		}
	}
}

// echoed is a LIST page that says the server applied s.
func echoed(l *corev1.ConfigMapList, s Shard) *corev1.ConfigMapList {
	l.ShardInfo = &metav1.ShardInfo{Selector: s.String()}
	return l
}

func newShardedReflector(lw ListerWatcher, store ReflectorStore, s Shard, local bool) *Reflector {
	return NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{
		UseWatchList: ptr.To(false), Shard: &s, ShardFilterLocally: local,
	})
}

// Every LIST and WATCH carries the selector; a server that applies it is
// used as any other.
func TestShardedReflectorSendsSelector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustShard(t, 1, 2)
		a, b := shardedCM(t, s, "a", "2", true), shardedCM(t, s, "b", "3", true)
		lw := newScript([]listReply{{list: echoed(cmList("5", "", a), s)}},
			[]watchReply{{events: []watch.Event{ev(watch.Added, b)}, hang: true}})
		store := cachetest.NewRecordingStore(nil)
		r := newShardedReflector(lw, store, s, false)
		startReflector(t, r)
		<-lw.drained
		synctest.Wait()
		for _, call := range lw.recorded() {
			if !strings.HasSuffix(call, " shard="+s.String()) {
				t.Errorf("call %q does not carry the shard selector", call)
			}
		}
		if got := store.CallStrings(); !slices.Contains(got, "Add ns/b@3") {
			t.Errorf("store calls %q, want b added", got)
		}
		if h := r.Health(); h.State != Synced {
			t.Errorf("health %+v, want Synced", h)
		}
	})
}

// A LIST the server did not shard never reaches the store: no echo, an
// echo of another selector (a ListerWatcher that sets its own), or an item
// outside the shard. Health says so at once, WaitForSync's error says how
// to fix it, and the Reflector tries again with backoff, syncing once the
// server shards.
func TestShardIgnoredListIsRefused(t *testing.T) {
	s := mustShard(t, 0, 2)
	other := mustShard(t, 1, 2)
	cases := map[string]func(t *testing.T) *corev1.ConfigMapList{
		"no echo": func(t *testing.T) *corev1.ConfigMapList { return cmList("5", "", shardedCM(t, s, "a", "2", true)) },
		"other echo": func(t *testing.T) *corev1.ConfigMapList {
			return echoed(cmList("5", "", shardedCM(t, s, "a", "2", true)), other)
		},
		"item outside": func(t *testing.T) *corev1.ConfigMapList {
			return echoed(cmList("5", "", shardedCM(t, s, "a", "2", false)), s)
		},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				good := echoed(cmList("7", "", shardedCM(t, s, "c", "6", true)), s)
				lw := newScript([]listReply{{list: bad(t)}, {list: bad(t)}, {list: good}}, nil)
				store := cachetest.NewRecordingStore(nil)
				r := newShardedReflector(lw, store, s, false)
				ctx, _ := startReflector(t, r)
				wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				defer cancel()
				err := r.WaitForSync(wctx)
				if !IsShardIgnored(err) || !strings.Contains(err.Error(), "ShardedListAndWatch") && !strings.Contains(err.Error(), "ListerWatcher") {
					t.Fatalf("WaitForSync = %v, want ErrShardIgnored saying how to fix it", err)
				}
				if h := r.Health(); h.State != Degraded || h.Reason != ReasonShardIgnored {
					t.Fatalf("health %+v, want Degraded(ShardIgnored)", h)
				}
				if err := r.WaitForSync(ctx); err != nil {
					t.Fatal(err)
				}
				if got := store.CallStrings(); len(got) == 0 || got[0] != "Replace rv=7 [ns/c@6]" {
					t.Fatalf("store calls %q, want only the sharded LIST's Replace", got)
				}
				if n := len(lw.recorded()); n < 3 {
					t.Fatalf("%d calls, want three LISTs", n)
				}
			})
		})
	}
}

// The retries after a refused LIST back off: in the first minute there
// are a handful of LISTs, not a hot loop.
func TestShardIgnoredBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustShard(t, 0, 2)
		var lists []listReply
		for range 1000 {
			lists = append(lists, listReply{list: cmList("5", "", shardedCM(t, s, "a", "2", true))})
		}
		lw := newScript(lists, nil)
		r := newShardedReflector(lw, cachetest.NewRecordingStore(nil), s, false)
		startReflector(t, r)
		time.Sleep(time.Minute)
		if n := len(lw.recorded()); n < 3 || n > 10 {
			t.Fatalf("%d LISTs in a minute, want a backed-off few", n)
		}
	})
}

// A server that rejects the selector (400) is Degraded at once with its
// message, and backs off.
func TestShardRejectedIsReportedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustShard(t, 0, 2)
		bad := apierrors.NewBadRequest("unsupported field path \"object.metadata.name\"")
		lw := newScript([]listReply{{err: bad}, {err: bad}, {err: bad}, {err: bad}, {err: bad}, {err: bad}, {err: bad}, {err: bad}, {err: bad}, {err: bad}, {err: bad}, {err: bad}}, nil)
		r := newShardedReflector(lw, cachetest.NewRecordingStore(nil), s, false)
		startReflector(t, r)
		time.Sleep(100 * time.Millisecond)
		h := r.Health()
		if h.State != Degraded || h.Reason != ReasonRejected || !strings.Contains(h.LastError.Error(), "object.metadata.name") {
			t.Fatalf("health %+v, want Degraded(Rejected) with the server's message", h)
		}
		time.Sleep(time.Minute)
		if n := len(lw.recorded()); n > 10 {
			t.Fatalf("%d LISTs in a minute, want a backed-off few", n)
		}
	})
}

// A watch event outside the shard ends the watch before the store sees
// it; the Reflector relists.
func TestShardIgnoredWatchIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustShard(t, 0, 4)
		in, out := shardedCM(t, s, "in", "6", true), shardedCM(t, s, "out", "7", false)
		lw := newScript(
			[]listReply{{list: echoed(cmList("5", ""), s)}, {list: echoed(cmList("9", ""), s)}},
			[]watchReply{{events: []watch.Event{ev(watch.Added, in), ev(watch.Added, out)}, hang: true}})
		store := cachetest.NewRecordingStore(nil)
		r := newShardedReflector(lw, store, s, false)
		startReflector(t, r)
		time.Sleep(200 * time.Millisecond)
		got := store.CallStrings()
		if !slices.Contains(got, "Add ns/in@6") || slices.Contains(got, "Add ns/out@7") {
			t.Fatalf("store calls %q: want in added and out never", got)
		}
		if h := r.Health(); h.State != Degraded || h.Reason != ReasonShardIgnored || !IsShardIgnored(h.LastError) {
			t.Fatalf("health %+v, want Degraded(ShardIgnored)", h)
		}
		time.Sleep(5 * time.Second)
		if calls := lw.recorded(); len(calls) < 3 || !strings.HasPrefix(calls[2], "LIST") {
			t.Fatalf("calls %q: want a relist after the refused watch", calls)
		}
	})
}

// Filtering locally, a server that ignores the selector is used: what is
// outside the shard is dropped before the store, and counted.
func TestShardFilterLocally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustShard(t, 1, 3)
		a, b := shardedCM(t, s, "a", "2", true), shardedCM(t, s, "b", "3", false)
		c, d := shardedCM(t, s, "c", "6", false), shardedCM(t, s, "d", "7", true)
		lw := newScript([]listReply{{list: cmList("5", "", a, b)}},
			[]watchReply{{events: []watch.Event{ev(watch.Added, c), ev(watch.Added, d), ev(watch.Deleted, b)}, hang: true}})
		store := cachetest.NewRecordingStore(nil)
		r := newShardedReflector(lw, store, s, true)
		startReflector(t, r)
		<-lw.drained
		synctest.Wait()
		want := []string{"Replace rv=5 [ns/a@2]", "Add ns/d@7"}
		got := store.CallStrings()
		if len(got) < 2 || got[0] != want[0] || !slices.Contains(got, want[1]) || slices.ContainsFunc(got, func(s string) bool {
			return strings.Contains(s, "ns/b") || strings.Contains(s, "ns/c")
		}) {
			t.Fatalf("store calls %q, want %q and nothing of b or c", got, want)
		}
		if n := r.Stats().ShardDropped; n != 3 {
			t.Fatalf("ShardDropped = %d, want 3 (b listed, c added, b deleted)", n)
		}
		if h := r.Health(); h.State != Synced {
			t.Fatalf("health %+v, want Synced", h)
		}
	})
}

// Filtering locally never accepts an echo of another selector: the
// server applied that one, and objects of ours would be missing.
func TestShardFilterLocallyRefusesOtherEcho(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustShard(t, 0, 2)
		lw := newScript([]listReply{{list: echoed(cmList("5", ""), mustShard(t, 1, 2))}}, nil)
		r := newShardedReflector(lw, cachetest.NewRecordingStore(nil), s, true)
		startReflector(t, r)
		time.Sleep(100 * time.Millisecond)
		if h := r.Health(); h.Reason != ReasonShardIgnored || !strings.Contains(h.LastError.Error(), "ListerWatcher") {
			t.Fatalf("health %+v, want ShardIgnored naming the ListerWatcher", h)
		}
	})
}

// A WatchList whose initial events hold an object outside the shard is
// not Replaced into the store.
func TestShardIgnoredWatchListIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustShard(t, 0, 2)
		out := shardedCM(t, s, "out", "4", false)
		lw := newScript(nil, []watchReply{{events: []watch.Event{ev(watch.Added, out), bookmark("5", true)}, hang: true}})
		store := cachetest.NewRecordingStore(nil)
		r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{Shard: &s})
		startReflector(t, r)
		<-lw.drained
		synctest.Wait()
		if got := store.CallStrings(); len(got) != 0 {
			t.Fatalf("store calls %q, want none", got)
		}
		if h := r.Health(); h.Reason != ReasonShardIgnored {
			t.Fatalf("health %+v, want ShardIgnored", h)
		}
	})
}

// SetShard on a running Reflector syncs the new shard at once (even from
// a backoff wait): merged, it lists only the ranges the new shard adds, at
// the resume position, and Replaces the store with what it keeps and what
// it listed (filtering locally too); asked to relist, it lists the whole
// shard again and counts why.
func TestSetShardMergesOrRelists(t *testing.T) {
	for _, relist := range []bool{false, true} {
		t.Run(fmt.Sprintf("relist=%v", relist), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { setShardOnce(t, relist) })
		})
	}
}

func setShardOnce(t *testing.T, relist bool) {
	s0, s1 := mustShard(t, 0, 2), mustShard(t, 1, 2)
	a, b := shardedCM(t, s0, "a", "2", true), shardedCM(t, s1, "b", "3", true)
	lw := newScript([]listReply{{list: echoed(cmList("5", "", a), s0)}, {list: echoed(cmList("6", "", b), s1)}}, []watchReply{{hang: true}})
	store := cachetest.NewRecordingStore(nil)
	r := NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{
		UseWatchList: ptr.To(false), Shard: &s0, ShardFilterLocally: true, ReshardByRelist: relist,
	})
	reshardOnce(t, r, s0, s1)
	if got := store.CallStrings(); !slices.Contains(got, "Replace rv=6 [ns/b@3]") {
		t.Fatalf("WaitForShard returned before the new shard was Replaced: %q", got)
	}
	<-lw.drained
	synctest.Wait()
	calls := lw.recorded()
	if len(calls) < 3 || !strings.HasPrefix(calls[2], `LIST rv="5" `) || !strings.HasSuffix(calls[2], "shard="+s1.String()) {
		t.Fatalf("calls %q, want a LIST at 5 with the new selector third", calls)
	}
	st := r.Stats()
	merged, relists := uint64(1), uint64(0)
	if relist {
		merged, relists = 0, 1
	}
	if !r.Shard().Equal(s1) || st.ReshardsMerged != merged || st.Lists[ListReshard] != relists || st.Lists[ListReshardAdded] != merged || st.ReshardFallbacks[FallbackAsked] != relists {
		t.Fatalf("shard %s, merged %d, LISTs %v, fallbacks %v", r.Shard(), st.ReshardsMerged, st.Lists, st.ReshardFallbacks)
	}
}

func TestSetShardErrors(t *testing.T) {
	unsharded := NewReflector(newScript(nil, nil), &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), 0)
	if err := unsharded.SetShard(mustShard(t, 0, 2)); !errors.Is(err, ErrNotSharded) {
		t.Errorf("SetShard on an unsharded Reflector = %v, want ErrNotSharded", err)
	}
	if err := unsharded.WaitForShard(t.Context(), mustShard(t, 0, 2)); !errors.Is(err, ErrNotSharded) {
		t.Errorf("WaitForShard on an unsharded Reflector = %v, want ErrNotSharded", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	never := newShardedReflector(newScript(nil, nil), cachetest.NewRecordingStore(nil), mustShard(t, 0, 2), false)
	if err := never.WaitForShard(ctx, mustShard(t, 0, 2)); !errors.Is(err, ErrNotSynced) || !errors.Is(err, context.Canceled) {
		t.Errorf("WaitForShard with an ended context = %v", err)
	}
	r := newShardedReflector(newScript(nil, nil), cachetest.NewRecordingStore(nil), mustShard(t, 0, 2), false)
	if err := r.SetShard(Shard{}); !errors.Is(err, ErrInvalidShard) {
		t.Errorf("SetShard(zero) = %v, want ErrInvalidShard", err)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "zero Shard") {
			t.Errorf("panic %v, want one naming the zero Shard", p)
		}
	}()
	NewReflectorWithOptions(newScript(nil, nil), nil, cachetest.NewRecordingStore(nil), ReflectorOptions{Shard: &Shard{}})
}

// A watch stream is checked until it has shown, in a row, enough objects
// in the shard that a server ignoring the selector would have sent one
// outside it with a chance below one in a billion; then it is trusted.
func TestShardTrustAfter(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want int
	}{{0.5, 30}, {0.25, 15}, {0.75, 73}, {1, 0}} {
		if got := trustAfter(c.p, false); got != c.want {
			t.Errorf("trustAfter(%v) = %d, want %d", c.p, got, c.want)
		}
	}
	if trustAfter(0.5, true) != -1 {
		t.Error("filtering locally must check every object")
	}
	s := mustShard(t, 0, 2)
	check := newShardSpec(s, false).newCheck()
	for i := range 30 {
		o := shardedCM(t, s, fmt.Sprint(i), "1", true)
		if keep, err := check.event(o, o); !keep || err != nil {
			t.Fatalf("in-shard object %d: %v, %v", i, keep, err)
		}
	}
	out := shardedCM(t, s, "out", "1", false)
	if keep, err := check.event(out, out); !keep || err != nil {
		t.Fatalf("after 30 in a row the stream is trusted; got %v, %v", keep, err)
	}
}

// An unstructured list without an echo (kube-apiserver 1.37 sets none on
// custom resources' lists) is judged by its items, each checked.
func TestShardUnstructuredListWithoutEcho(t *testing.T) {
	s := mustShard(t, 0, 2)
	item := func(in bool) map[string]interface{} {
		c := shardedCM(t, s, "x", "1", in)
		return map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": c.Name, "namespace": c.Namespace, "uid": string(c.UID), "resourceVersion": "1"}}
	}
	for _, in := range []bool{true, false} {
		u := &unstructured.UnstructuredList{Object: map[string]interface{}{"metadata": map[string]interface{}{"resourceVersion": "5"}}}
		u.Items = []unstructured.Unstructured{{Object: item(in)}}
		var l listed
		_, err := l.addPage(u, &pager{shard: newShardSpec(s, false).newCheck()})
		if (err == nil) != in || (err != nil && !IsShardIgnored(err)) {
			t.Errorf("item in the shard %v: error %v", in, err)
		}
	}
}

// The echo is read from unstructured lists too (dynamic clients).
func TestShardInfoOfUnstructured(t *testing.T) {
	u := &unstructured.UnstructuredList{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"shardInfo": map[string]interface{}{"selector": "x"}},
	}}
	m, err := meta.ListAccessor(u)
	if err != nil {
		t.Fatal(err)
	}
	if info := shardInfoOf(u, m); info == nil || info.Selector != "x" {
		t.Fatalf("shardInfoOf = %+v, want selector x", info)
	}
	u.Object = map[string]interface{}{}
	if info := shardInfoOf(u, m); info != nil {
		t.Fatalf("shardInfoOf = %+v, want nil", info)
	}
}

// After a merged reshard the watch resumes from where it was, with the
// new selector: events of the added ranges at or below the LIST's
// resourceVersion are older than what it gave and are dropped, events of
// the kept ranges are applied, and the first event past the LIST ends the
// catch-up.
func TestMergedReshardDropsWhatItsListCovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s0, s1 := mustShard(t, 0, 2), mustShard(t, 1, 2)
		whole, _ := s0.Union(s1)
		a := shardedCM(t, s0, "a", "2", true)
		b := shardedCM(t, s1, "b", "7", true)
		lw := newScript([]listReply{{list: echoed(cmList("5", "", a), s0)}, {list: echoed(cmList("8", "", b), s1)}}, nil)
		store := cachetest.NewRecordingStore(nil)
		r := newShardedReflector(lw, store, s0, false)
		reshardOnce(t, r, s0, whole)
		synctest.Wait()
		w := lw.current(t)
		at := func(c *corev1.ConfigMap, rv string) *corev1.ConfigMap {
			c = c.DeepCopy()
			c.ResourceVersion = rv
			return c
		}
		w.Modify(at(b, "6"))                                // older than the listed b@7
		w.Add(shardedCM(t, s1, "c", "7", true))             // covered by the LIST at 8
		w.Modify(at(a, "7"))                                // a kept range: applied
		w.Delete(at(b, "8"))                                // at the LIST's version: covered
		w.Modify(at(shardedCM(t, s1, "d", "9", true), "9")) // past the LIST: applied
		w.Modify(at(b, "10"))                               // applied
		synctest.Wait()
		got := store.CallStrings()
		want := []string{"Replace rv=5 [ns/a@2]", "Replace rv=8 [ns/a@2 ns/b@7]", "Update ns/a@7", "Update ns/d@9", "Update ns/b@10"}
		var calls []string
		for _, c := range got {
			if !strings.HasPrefix(c, "UpdateResourceVersion") {
				calls = append(calls, c)
			}
		}
		if !slices.Equal(calls, want) {
			t.Fatalf("store calls %q, want %q", calls, want)
		}
		if ev := r.Stats().Events; ev[watch.Added] != 1 || ev[watch.Modified] != 4 || ev[watch.Deleted] != 1 {
			t.Fatalf("events counted %v, want every one received, the dropped ones too", ev)
		}
		if watches := lw.recorded(); !strings.HasPrefix(watches[len(watches)-1], `WATCH rv="5"`) {
			t.Fatalf("the watch did not resume from 5: %q", watches)
		}
	})
}

// Shrinking a shard calls no API but the new watch: the objects outside
// it leave the store in one Replace, at the resume position, and the
// watch resumes from there with the narrower selector.
func TestShrinkingAShardListsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		whole, half := mustShard(t, 0, 1), mustShard(t, 0, 2)
		in, out := shardedCM(t, half, "in", "2", true), shardedCM(t, half, "out", "3", false)
		lw := newScript([]listReply{{list: echoed(cmList("5", "", in, out), whole)}}, nil)
		store := cachetest.NewRecordingStore(nil)
		r := newShardedReflector(lw, store, whole, false)
		reshardOnce(t, r, whole, half)
		synctest.Wait()
		calls := lw.recorded()
		if len(calls) != 3 || !strings.HasPrefix(calls[2], `WATCH rv="5"`) || !strings.HasSuffix(calls[2], "shard="+half.String()) {
			t.Fatalf("calls %q, want the first LIST, its watch, and a watch from 5 with the half", calls)
		}
		if got := store.CallStrings(); !slices.Contains(got, "Replace rv=5 [ns/in@2]") {
			t.Fatalf("store calls %q, want the half Replaced at 5", got)
		}
		if st := r.Stats(); st.ReshardsMerged != 1 || st.Lists[ListReshardAdded] != 0 || st.Lists[ListReshard] != 0 {
			t.Fatalf("merged %d, lists %v", st.ReshardsMerged, st.Lists)
		}
	})
}

// A resourceVersion that is not an integer cannot order events against
// a merge's LIST: the reshard relists the whole shard, and says why.
func TestReshardWithIncomparableVersionsRelistsAndCountsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s0, s1 := mustShard(t, 0, 2), mustShard(t, 1, 2)
		a, b := shardedCM(t, s0, "a", "x2", true), shardedCM(t, s1, "b", "x3", true)
		lw := newScript([]listReply{{list: echoed(cmList("x5", "", a), s0)}, {list: echoed(cmList("x6", "", b), s1)}}, nil)
		r := newShardedReflector(lw, cachetest.NewRecordingStore(nil), s0, false)
		reshardOnce(t, r, s0, s1)
		st := r.Stats()
		if st.ReshardsMerged != 0 || st.Lists[ListReshard] != 1 || st.ReshardFallbacks[FallbackIncomparable] != 1 {
			t.Fatalf("merged %d, lists %v, fallbacks %v", st.ReshardsMerged, st.Lists, st.ReshardFallbacks)
		}
	})
}

// reshardOnce runs r until it has synced with from, gives it to, and
// waits until it has synced with to.
func reshardOnce(t *testing.T, r *Reflector, from, to Shard) {
	t.Helper()
	ctx, _ := startReflector(t, r)
	if err := r.WaitForShard(ctx, from); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if err := r.SetShard(to); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitForShard(ctx, to); err != nil {
		t.Fatal(err)
	}
}
