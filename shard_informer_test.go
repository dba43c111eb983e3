package cache

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// changeLog records handler calls as "add a", "update a", "delete a".
type changeLog struct {
	mu      sync.Mutex
	changes []string
}

func (l *changeLog) add(kind string, obj interface{}) {
	if t, ok := obj.(DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, fmt.Sprintf("%s %s", kind, obj.(*corev1.ConfigMap).Name))
}

func (l *changeLog) handler() ResourceEventHandlerFuncs {
	return ResourceEventHandlerFuncs{
		AddFunc: func(o interface{}) { l.add("add", o) },
		UpdateFunc: func(old, o interface{}) {
			l.add("update", o)
			l.mu.Lock()
			defer l.mu.Unlock()
			last := &l.changes[len(l.changes)-1]
			*last += "@" + old.(*corev1.ConfigMap).ResourceVersion + "->" + o.(*corev1.ConfigMap).ResourceVersion
		},
		DeleteFunc: func(o interface{}) { l.add("delete", o) },
	}
}

func (l *changeLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.changes
	l.changes = nil
	slices.Sort(out)
	return out
}

// Resharding a running informer: objects that left the shard reach the
// handlers as deletes, those that entered as adds, and unchanged ones as
// nothing new: the update with the same resourceVersion on both sides
// that every relist brings, as in client-go. The informer was made sharded
// by the one-line constructor.
// A reshard is merged into the store: only the range the new shard adds
// is listed, the object that left is deleted with no call, the one that
// stays gets no event, and the watch resumes from where it was.
// With a compact store, the object that stays keeps its record: the
// merge holds bytes, not a decoded copy; and it finds what stays by the
// hash of the UID each record keeps, decoding none of them (the read
// cache is off, so any read of a record would decode it).
func TestInformerReshard(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) { informerReshard(t, compact) })
	}
}

func informerReshard(t *testing.T, compact bool) {
	synctest.Test(t, func(t *testing.T) {
		old := mustShard(t, 0, 2) // the first half
		q0, q2 := mustShard(t, 0, 4), mustShard(t, 2, 4)
		next, _ := q0.Union(q2) // the first and the third quarter
		stays := shardedCM(t, q0, "stays", "2", true)
		leaves := shardedCM(t, mustShard(t, 1, 4), "leaves", "3", true)
		enters := shardedCM(t, q2, "enters", "4", true)
		lw := newScript([]listReply{
			{list: echoed(cmList("5", "", stays, leaves), old)},
			{list: echoed(cmList("6", "", enters), q2)},
		}, []watchReply{{hang: true}, {hang: true}})
		o := ReflectorOptions{Shard: &old, UseWatchList: ptr.To(false)}
		if compact {
			o.Compact = &CompactOptions{ReadCacheBytes: -1}
		}
		inf := NewSharedIndexInformerWith(o)(lw, &corev1.ConfigMap{}, 0, Indexers{})
		log := &changeLog{}
		if _, err := inf.AddEventHandler(log.handler()); err != nil {
			t.Fatal(err)
		}
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		if got, want := log.take(), []string{"add leaves", "add stays"}; !slices.Equal(got, want) {
			t.Fatalf("first sync: %q, want %q", got, want)
		}
		held := heldRecord(inf, "ns/stays")
		decodes := storeDecodes(inf)
		if err := inf.(Resharder).SetShard(next); err != nil {
			t.Fatal(err)
		}
		if err := inf.(Resharder).WaitForShard(t.Context(), next); err != nil {
			t.Fatal(err)
		}
		// WaitForShard returns once the indexer holds the new shard.
		if keys := inf.GetStore().ListKeys(); !slices.Contains(keys, "ns/enters") || slices.Contains(keys, "ns/leaves") {
			t.Fatalf("WaitForShard returned with the indexer at %q", keys)
		}
		synctest.Wait()
		if got, want := log.take(), []string{"add enters", "delete leaves"}; !slices.Equal(got, want) {
			t.Fatalf("after the reshard: %q, want %q", got, want)
		}
		keys := inf.GetStore().ListKeys()
		slices.Sort(keys)
		if want := []string{"ns/enters", "ns/stays"}; !slices.Equal(keys, want) {
			t.Fatalf("store %q, want %q", keys, want)
		}
		lw.mu.Lock()
		calls := slices.Clone(lw.calls)
		lw.mu.Unlock()
		want := []string{`LIST rv="0" limit=500 shard=` + old.String(), `WATCH rv="5"`, `LIST rv="5" shard=` + q2.String(), `WATCH rv="5"`}
		if len(calls) != len(want) {
			t.Fatalf("calls %q, want %q…", calls, want)
		}
		for i, c := range calls {
			if !strings.HasPrefix(c, want[i]) || strings.HasPrefix(c, "WATCH") && i == 3 && !strings.HasSuffix(c, "shard="+next.String()) {
				t.Fatalf("call %d: %q, want %q… (calls %q)", i, c, want[i], calls)
			}
		}
		st := inf.(InformerHealthReporter).Stats().Reflector
		if st.ReshardsMerged != 1 || st.Lists[ListReshardAdded] != 1 || st.Lists[ListReshard] != 0 {
			t.Fatalf("stats: merged %d, lists %v", st.ReshardsMerged, st.Lists)
		}
		if now := heldRecord(inf, "ns/stays"); now != held || compact != (held != nil) {
			t.Fatalf("compact=%v: the object that stayed is held as %p, was %p", compact, now, held)
		}
		// The handlers' "add enters" and "delete leaves" decode one each.
		if n := storeDecodes(inf) - decodes; n > 2 {
			t.Fatalf("the reshard decoded %d records, want at most the handlers' 2", n)
		}
	})
}

// storeDecodes is how many records inf's compact store has decoded, 0
// without one.
func storeDecodes(inf SharedIndexInformer) uint64 {
	if st := inf.(InformerHealthReporter).Stats().Store; st != nil {
		return st.Decodes
	}
	return 0
}

// heldRecord is the record inf's compact store holds under key, nil
// without a compact store.
func heldRecord(inf SharedIndexInformer, key string) *compactRecord {
	cs := inf.GetIndexer().(*guardedIndexer).compact
	if cs == nil {
		return nil
	}
	r, _ := cs.record(key)
	return r
}

// SetShard before Run makes an informer sharded; the zero Shard is an
// error; an informer running unsharded cannot be resharded.
func TestInformerSetShardBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustShard(t, 1, 2)
		in := shardedCM(t, s, "in", "2", true)
		lw := newScript([]listReply{{list: echoed(cmList("5", "", in), s)}}, []watchReply{{hang: true}})
		inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, Indexers{})
		if err := inf.(ReflectorConfigurable).SetReflectorOptions(ReflectorOptions{UseWatchList: ptr.To(false)}); err != nil {
			t.Fatal(err)
		}
		if err := inf.(Resharder).SetShard(Shard{}); err == nil {
			t.Fatal("SetShard(zero) succeeded")
		}
		if err := inf.(Resharder).SetShard(s); err != nil {
			t.Fatal(err)
		}
		stop := runInformer(t, inf)
		defer stop()
		synctest.Wait()
		calls := lw.recorded()
		if len(calls) == 0 || !slices.Contains(calls, `LIST rv="0" limit=500 shard=`+s.String()) {
			t.Fatalf("calls %q, want a sharded LIST", calls)
		}
		if keys := inf.GetStore().ListKeys(); !slices.Equal(keys, []string{"ns/in"}) {
			t.Fatalf("store %q", keys)
		}

		plain := NewSharedIndexInformer(newScript(nil, nil), &corev1.ConfigMap{}, 0, Indexers{})
		stopPlain := runInformer(t, plain)
		defer stopPlain()
		synctest.Wait()
		if err := plain.(Resharder).SetShard(s); err == nil {
			t.Fatal("SetShard on a running unsharded informer succeeded")
		}
	})
}
