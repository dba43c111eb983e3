//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
)

// replica is one of our sharded informers of the Secrets in a namespace,
// with its ListerWatcher observed (and gated, to hold its watches) and its
// handler's calls recorded.
type replica struct {
	name string
	// shard is the shard last given and reshards counts the changes of
	// shard made while it ran; only the test's goroutine uses them.
	shard    cache.Shard
	reshards uint64
	gate     *gatedLW
	lw       *observedLW
	inf      cache.SharedIndexInformer
	log      *handlerLog
}

// startReplica runs an informer of ours over the Secrets in ns with shard
// s, through the ReflectorConfigurable interface its constructor's value
// implements, until t ends. It does not wait for the informer to sync.
func startReplica(t *testing.T, cs *kubernetes.Clientset, ns, name string, s cache.Shard) *replica {
	t.Helper()
	gate := &gatedLW{ListWatch: cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "secrets", ns, fields.Everything())}
	r := &replica{name: name, shard: s, gate: gate, lw: observe(gate), log: newHandlerLog()}
	r.inf = cache.NewSharedIndexInformer(r.lw, &corev1.Secret{}, 0, cache.Indexers{})
	rc, ok := r.inf.(cache.ReflectorConfigurable)
	if !ok {
		t.Fatalf("%T does not implement cache.ReflectorConfigurable", r.inf)
	}
	// LISTs rather than WatchList: Secrets have no watch cache here
	// (--watch-cache-sizes=secrets#0), so a held watch meets etcd's
	// compaction (410) and each shard change is one LIST to observe.
	err := rc.SetReflectorOptions(cache.ReflectorOptions{Name: name, Shard: &s, UseWatchList: ptr.To(false), Backoff: quickBackoff()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.inf.AddEventHandler(r.log.handler()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { r.inf.RunWithContext(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// health is the informer's InformerHealthReporter view.
func (r *replica) health(t *testing.T) cache.InformerHealthReporter {
	t.Helper()
	h, ok := r.inf.(cache.InformerHealthReporter)
	if !ok {
		t.Fatalf("%T does not implement cache.InformerHealthReporter", r.inf)
	}
	return h
}

// syncedTo waits until the replica has LISTed with shard s's selector
// (a complete LIST sequence at or after position from, every page
// echoing it) and its handler has been told of every object of that LIST
// (or of its deletion after handler call number since): its store then
// holds shard s as of that LIST or newer.
func (r *replica) syncedTo(t *testing.T, s cache.Shard, from int, since uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), minute)
	defer cancel()
	l, err := r.lw.completedSince(ctx, from, s.String())
	if err == nil {
		err = r.log.caughtUp(ctx, l, since)
	}
	if err != nil {
		t.Fatalf("%s not synced to %s: %v (health %+v)", r.name, s, err, r.health(t).Health())
	}
}

// resharder is the informer's Resharder view.
func (r *replica) resharder(t *testing.T) cache.Resharder {
	t.Helper()
	res, ok := r.inf.(cache.Resharder)
	if !ok {
		t.Fatalf("%T does not implement cache.Resharder", r.inf)
	}
	return res
}

// waitForShard waits as an operator would, with the informer's
// WaitForShard, and checks what it promises: the indexer holds shard s's
// objects, on the objects that never change (stable, key to UID), whose
// presence no later event can explain.
func (r *replica) waitForShard(t *testing.T, s cache.Shard, stable map[string]types.UID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), minute)
	defer cancel()
	if err := r.resharder(t).WaitForShard(ctx, s); err != nil {
		t.Fatalf("%s: WaitForShard(%s): %v (health %+v)", r.name, s, err, r.health(t).Health())
	}
	var missing []string
	for key, uid := range stable {
		if _, ok, _ := r.inf.GetStore().GetByKey(key); owns(s, uid) && !ok {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Errorf("%s: WaitForShard(%s) returned with %d objects of the shard not in the indexer (first %s)", r.name, s, len(missing), missing[0])
	}
}

// setShard gives the running replica shard s (Resharder.SetShard), waits
// for it with waitForShard, and then checks the sync independently: the
// reshard is merged, so a complete LIST echoing the selector of only the
// ranges s adds (none when s only shrinks the shard), and the handler
// told of all of it. Giving it the shard it has is a no-op (the Reflector
// does not list), for which WaitForShard returns at once.
func (r *replica) setShard(t *testing.T, s cache.Shard, stable map[string]types.UID) {
	t.Helper()
	if s.Equal(r.shard) {
		r.waitForShard(t, s, stable)
		t.Logf("%s keeps %s", r.name, s)
		return
	}
	added, err := s.Minus(r.shard)
	if err != nil {
		t.Fatal(err)
	}
	from, since := r.lw.mark(), r.log.callMark()
	if err := r.resharder(t).SetShard(s); err != nil {
		t.Fatalf("%s: SetShard(%s): %v", r.name, s, err)
	}
	r.shard = s
	r.reshards++
	r.waitForShard(t, s, stable)
	if added.IsZero() {
		t.Logf("%s shrank to %s: nothing listed", r.name, s)
		return
	}
	r.syncedTo(t, added, from, since)
}

// stableObjects returns the key and UID of each Secret in ns whose name
// starts with prefix.
func stableObjects(t *testing.T, cs kubernetes.Interface, ns, prefix string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for key, uid := range keysOf(t, shardedSecretList(t, cs, ns, cache.Shard{})) {
		if strings.HasPrefix(key, ns+"/"+prefix) {
			out[key] = uid
		}
	}
	return out
}

// keysOf returns the namespace/name keys of objs.
func keysOf(t *testing.T, objs []interface{}) map[string]types.UID {
	t.Helper()
	out := make(map[string]types.UID, len(objs))
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetUID()
	}
	return out
}

// ownerSampler checks, at a steady pace until stopped, that every one of
// a fixed set of objects that never change is in the store of at least
// one replica of a group (which may grow).
type ownerSampler struct {
	objects []string
	stop    chan struct{}
	done    chan struct{}

	mu       sync.Mutex
	replicas []*replica
	samples  int
	orphans  []string
}

func newOwnerSampler(objects []string, replicas []*replica) *ownerSampler {
	return &ownerSampler{objects: objects, replicas: slices.Clone(replicas), stop: make(chan struct{}), done: make(chan struct{})}
}

// startOwnerSampler samples every interval until finish.
func startOwnerSampler(objects []string, replicas []*replica, every time.Duration) *ownerSampler {
	s := newOwnerSampler(objects, replicas)
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-tick.C:
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

// add makes r one of the group from the next sample on.
func (s *ownerSampler) add(r *replica) {
	s.mu.Lock()
	s.replicas = append(s.replicas, r)
	s.mu.Unlock()
}

// sample takes one sample and returns the objects it found in no store.
func (s *ownerSampler) sample() []string {
	s.mu.Lock()
	replicas := slices.Clone(s.replicas)
	s.mu.Unlock()
	var orphans []string
	for _, key := range s.objects {
		owned := false
		for _, r := range replicas {
			if _, ok, _ := r.inf.GetStore().GetByKey(key); ok {
				owned = true
				break
			}
		}
		if !owned {
			orphans = append(orphans, key)
		}
	}
	s.mu.Lock()
	s.samples++
	if len(orphans) > 0 && len(s.orphans) < 10 {
		s.orphans = append(s.orphans, fmt.Sprintf("sample %d at %s: %d objects in no store (first %s)", s.samples, time.Now().Format("15:04:05.000"), len(orphans), orphans[0]))
	}
	s.mu.Unlock()
	return orphans
}

// finish stops sampling and returns the number of samples and a line per
// sample that found an object without an owner (the first 10).
func (s *ownerSampler) finish() (int, []string) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.orphans
}
