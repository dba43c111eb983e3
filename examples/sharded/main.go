// Command sharded splits one resource over three replicas with the API
// server's own sharding, then reshards to four while the objects keep
// changing, and shows what a replica does on a server that ignores the
// shard selector.
//
// Everything runs in one process on the embedded test API server
// (cachetest, over HTTP, through client-go's real Clientset). Each replica
// is one of our SharedIndexInformers made sharded by one line
// (cache.NewSharedIndexInformerWith with ReflectorOptions.Shard).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

func main() {
	objects := flag.Int("objects", 600, "ConfigMaps on the server")
	timeout := flag.Duration("timeout", time.Minute, "give up after this long")
	flag.Parse()
	if *objects <= 0 {
		fmt.Fprintln(os.Stderr, "sharded: --objects must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := run(ctx, *objects, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sharded:", err)
		os.Exit(1)
	}
	fmt.Println("OK: the shards were disjoint and complete before and after resharding, and the ignoring server was refused or filtered locally")
}

// demo is the embedded server and what the replicas need to reach it.
type demo struct {
	srv *cachetest.Server
	cms *cachetest.Resource
	cs  kubernetes.Interface
	out io.Writer
}

func run(ctx context.Context, objects int, out io.Writer) error {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	d := &demo{srv: srv, out: out}
	d.cms = srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	for i := range objects {
		if _, err := d.cms.Create(ctx, configMap(i), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	srv.Start()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		return err
	}
	d.cs = cs
	if err := d.scaleOut(ctx, objects); err != nil {
		return err
	}
	return d.ignoringServer(ctx)
}

// scaleOut runs three replicas, proves their shards disjoint and complete,
// then reshards to four while a writer keeps changing objects.
func (d *demo) scaleOut(ctx context.Context, objects int) error {
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	fleet := &fleet{}
	for i := range 3 {
		s, err := cache.ReplicaShard(i, 3)
		if err != nil {
			return err
		}
		fleet.start(rctx, &wg, d.newReplica(s), s)
	}
	if err := fleet.waitFor(ctx); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "-- 3 replicas synced")
	if err := d.report(fleet); err != nil {
		return err
	}
	// The objects every replica has seen, taken before the writer starts:
	// an object created later may not have reached any watch when sampled.
	resident, _ := d.cms.Objects()
	before, _, _ := fleet.fetched()
	oldShards := slices.Clone(fleet.shards)
	writer := startWriter(rctx, &wg, d.cms, objects)
	fmt.Fprintln(d.out, "-- resharding to 4 while objects change: each old replica first takes the union of its old and new shard")
	if err := fleet.reshard(rctx, &wg, d, 4, resident); err != nil {
		return err
	}
	writer.stop()
	if err := waitCaughtUp(ctx, d.cms, fleet.informers); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "-- 4 replicas synced; %d writes during the reshard; in %d samples taken while it ran, each of the %d objects held before it had at least %d owner(s)\n", writer.writes(), fleet.samples, len(resident), fleet.minOwners)
	if fleet.samples == 0 || fleet.minOwners < 1 {
		return errors.New("an object had no owner during the reshard")
	}
	after, merged, relisted := fleet.fetched()
	moved := movedBetween(resident, oldShards, fleet.shards)
	fmt.Fprintf(d.out, "-- the reshard fetched %d objects from the server for %d that changed replica (of %d): %d shard changes merged, %d relisted\n", after-before, moved, len(resident), merged, relisted)
	if relisted != 0 {
		return errors.New("a reshard relisted its whole shard")
	}
	return d.report(fleet)
}

// newReplica is one replica's informer: ours, sharded by one line.
func (d *demo) newReplica(s cache.Shard) cache.SharedIndexInformer {
	lw := cache.NewListWatchFromClient(d.cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
	return cache.NewSharedIndexInformerWith(cache.ReflectorOptions{Shard: &s})(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
}

// report prints each replica's share and checks that the shards are
// disjoint and, together, the server's objects.
func (d *demo) report(f *fleet) error {
	objs, _ := d.cms.Objects()
	owners := ownersOf(f.informers)
	for i, inf := range f.informers {
		n := len(inf.GetStore().ListKeys())
		fmt.Fprintf(d.out, "replica %d: %4d objects (%4.1f%%)  %s\n", i, n, 100*float64(n)/float64(len(objs)), f.shards[i])
	}
	var missing, shared int
	for _, o := range objs {
		key := o.(*corev1.ConfigMap).Namespace + "/" + o.(*corev1.ConfigMap).Name
		switch owners[key] {
		case 0:
			missing++
		case 1:
		default:
			shared++
		}
	}
	fmt.Fprintf(d.out, "server: %d objects; owned by no replica: %d; by more than one: %d\n", len(objs), missing, shared)
	if missing != 0 || shared != 0 || len(owners) != len(objs) {
		return errors.New("the shards are not disjoint and complete")
	}
	return nil
}

// ignoringServer turns the server's sharding off (a server without the
// ShardedListAndWatch gate) and starts two replicas: one refusing, as
// by default, one filtering locally.
func (d *demo) ignoringServer(ctx context.Context) error {
	d.srv.SetShardedListAndWatch(false)
	fmt.Fprintln(d.out, "-- the server now ignores shard selectors (ShardedListAndWatch off)")
	s, err := cache.ReplicaShard(0, 2)
	if err != nil {
		return err
	}
	lw := cache.NewListWatchFromClient(d.cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
	refusing := cache.NewSharedIndexInformerWith(cache.ReflectorOptions{Shard: &s})(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	local := cache.NewSharedIndexInformerWith(cache.ReflectorOptions{Shard: &s, ShardFilterLocally: true, UseWatchList: ptr.To(false)})(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { refusing.RunWithContext(expectingErrors(rctx, "refusing-replica")) })
	wg.Go(func() { local.RunWithContext(rctx) })
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	err = refusing.(interface{ WaitForSync(context.Context) error }).WaitForSync(wctx)
	h := refusing.(cache.InformerHealthReporter).Health().Reflector
	fmt.Fprintf(d.out, "refusing replica: %d objects cached, health %s(%s)\n  WaitForSync: %v\n", len(refusing.GetStore().ListKeys()), h.State, h.Reason, err)
	if !cache.IsShardIgnored(err) {
		return fmt.Errorf("want the refusing replica to say the server ignored the selector, got %v", err)
	}
	if err := local.(interface{ WaitForSync(context.Context) error }).WaitForSync(ctx); err != nil {
		return err
	}
	objs, _ := d.cms.Objects()
	in := 0
	for _, o := range objs {
		if ok, _ := s.Contains(o); ok {
			in++
		}
	}
	n := len(local.GetStore().ListKeys())
	fmt.Fprintf(d.out, "filtering replica (ShardFilterLocally): %d objects cached of %d received; its shard holds %d\n", n, len(objs), in)
	if n != in {
		return errors.New("the filtering replica does not hold exactly its shard")
	}
	return nil
}

func configMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", i%7), Name: fmt.Sprintf("cm-%04d", i)},
		Data:       map[string]string{"v": "1"},
	}
}
