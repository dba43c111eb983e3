package cache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/cachetest"
)

// chaosNamespaces are the namespaces the workload writes in.
var chaosNamespaces = []string{"alpha", "beta", "gamma", "delta"}

// workload drives random creates, updates and deletes against a resource.
// It keeps the keys it believes exist in a slice, so that a seed always
// picks the same objects.
type workload struct {
	t    *testing.T
	rng  *rand.Rand
	cms  *cachetest.Resource
	keys []string
	next int
	// creates, updates and deletes count successful writes.
	creates, updates, deletes int
}

// step makes one random write.
func (w *workload) step() {
	switch p := w.rng.IntN(100); {
	case len(w.keys) == 0 || p < 40:
		w.create()
	case p < 75:
		w.update(w.rng.IntN(len(w.keys)))
	default:
		w.remove(w.rng.IntN(len(w.keys)))
	}
}

func (w *workload) create() {
	ns := chaosNamespaces[w.rng.IntN(len(chaosNamespaces))]
	name := "obj-" + strconv.Itoa(w.next)
	w.next++
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"gen": "0"}}
	if _, err := w.cms.Create(w.t.Context(), obj, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("workload create: %v", err)
	}
	w.keys = append(w.keys, ns+"/"+name)
	w.creates++
}

func (w *workload) update(i int) {
	ns, name, _ := SplitMetaNamespaceKey(w.keys[i])
	obj, err := w.cms.Get(w.t.Context(), ns, name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatalf("workload get %s: %v", w.keys[i], err)
	}
	c := obj.(*corev1.ConfigMap)
	gen, _ := strconv.Atoi(c.Data["gen"])
	c.Data["gen"] = strconv.Itoa(gen + 1)
	if _, err := w.cms.Update(w.t.Context(), c, metav1.UpdateOptions{}); err != nil {
		w.t.Fatalf("workload update %s: %v", w.keys[i], err)
	}
	w.updates++
}

func (w *workload) remove(i int) {
	ns, name, _ := SplitMetaNamespaceKey(w.keys[i])
	if _, err := w.cms.Delete(w.t.Context(), ns, name, metav1.DeleteOptions{}); err != nil {
		w.t.Fatalf("workload delete %s: %v", w.keys[i], err)
	}
	w.keys = slices.Delete(w.keys, i, i+1)
	w.deletes++
}

// injectFault injects one random fault of any kind on the reflector's
// verbs and returns a name for it (server-side kinds are also counted by
// the server's Stats).
func injectFault(rng *rand.Rand, srv *cachetest.Server) string {
	verb := []cachetest.Verb{cachetest.VerbList, cachetest.VerbWatch}[rng.IntN(2)]
	switch rng.IntN(8) {
	case 0, 1:
		f := randomErrorFault(rng)
		srv.FailNext(verb, 1+rng.IntN(3), f)
		return "fail " + string(verb) + " " + string(f.Kind())
	case 2:
		srv.CloseWatches()
		return "close watches"
	case 3:
		srv.HangWatches()
		return "hang watches"
	case 4:
		srv.DropNextWatches(1)
		return "drop next watch"
	case 5:
		srv.Delay(verb, time.Duration(1+rng.IntN(10))*time.Second)
		return "delay " + string(verb)
	case 6:
		srv.Delay(verb, 0)
		return "undelay " + string(verb)
	}
	if err := srv.Compact(srv.ResourceVersion()); err != nil {
		panic(err) // the server's own resourceVersion is always valid
	}
	return "compact"
}

func randomErrorFault(rng *rand.Rand) cachetest.Fault {
	switch rng.IntN(5) {
	case 0:
		return cachetest.TooManyRequests(time.Duration(rng.IntN(6)) * time.Second)
	case 1:
		return cachetest.InternalError()
	case 2:
		return cachetest.Forbidden()
	case 3:
		return cachetest.ConnectionRefused()
	}
	return cachetest.Timeout()
}

// sink is where the Reflector writes, and how a test reads the result.
type sink interface {
	store() ReflectorStore
	// contents returns what a reader of the cache would see.
	contents() []interface{}
	// close stops whatever the sink runs and waits for it.
	close()
}

// storeSink is our own store.
type storeSink struct{ s Store }

func (s storeSink) store() ReflectorStore   { return s.s }
func (s storeSink) contents() []interface{} { return s.s.List() }
func (s storeSink) close()                  {}

// fifoSink is client-go's DeltaFIFO drained into an indexer, as an
// informer's processing loop does.
type fifoSink struct {
	fifo    *clientgocache.DeltaFIFO
	indexer clientgocache.Indexer
	done    sync.WaitGroup
	// err is the first error the consumer met; read after close.
	err error
}

func newFIFOSink() *fifoSink {
	indexer := clientgocache.NewIndexer(clientgocache.DeletionHandlingMetaNamespaceKeyFunc, clientgocache.Indexers{})
	s := &fifoSink{
		indexer: indexer,
		fifo: clientgocache.NewDeltaFIFOWithOptions(clientgocache.DeltaFIFOOptions{
			KeyFunction: clientgocache.MetaNamespaceKeyFunc, KnownObjects: indexer, EmitDeltaTypeReplaced: true,
		}),
	}
	s.done.Go(s.consume)
	return s
}

func (s *fifoSink) consume() {
	for {
		_, err := s.fifo.Pop(func(obj interface{}, _ bool) error { return s.apply(obj.(clientgocache.Deltas)) })
		if errors.Is(err, clientgocache.ErrFIFOClosed) {
			return
		}
		if err != nil && s.err == nil {
			s.err = err
		}
	}
}

// apply applies one key's deltas to the indexer.
func (s *fifoSink) apply(deltas clientgocache.Deltas) error {
	for _, d := range deltas {
		var err error
		switch d.Type {
		case clientgocache.Deleted:
			err = s.indexer.Delete(d.Object)
		default:
			if _, exists, _ := s.indexer.Get(d.Object); exists {
				err = s.indexer.Update(d.Object)
			} else {
				err = s.indexer.Add(d.Object)
			}
		}
		if err != nil {
			return fmt.Errorf("applying %s delta: %w", d.Type, err)
		}
	}
	return nil
}

func (s *fifoSink) store() ReflectorStore   { return s.fifo }
func (s *fifoSink) contents() []interface{} { return s.indexer.List() }
func (s *fifoSink) close() {
	s.fifo.Close()
	s.done.Wait()
}
