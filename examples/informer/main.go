// Command informer runs kreflector's SharedIndexInformer (client-go's
// interface, our Reflector underneath) with an event handler that prints
// what it sees.
//
// By default it starts the embedded test API server (cachetest, over HTTP),
// syncs its ConfigMaps through client-go's real Clientset, then makes a few
// changes (with a dropped watch in between) and prints each event the
// handlers see, ending with a check of the informer's cache against the
// server. With --kubeconfig (or KUBECONFIG) it watches a real cluster
// read-only for --duration instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/cachetest"
)

type config struct {
	kubeconfig string
	namespace  string
	duration   time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "watch the cluster of this kubeconfig read-only instead of the embedded server")
	flag.StringVar(&cfg.namespace, "namespace", metav1.NamespaceAll, "namespace to watch (default all)")
	flag.DurationVar(&cfg.duration, "duration", 20*time.Second, "how long to run at most")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: informer [flags]\n\nRuns kreflector's SharedIndexInformer over ConfigMaps and prints what its\nevent handler sees.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if cfg.duration <= 0 {
		fmt.Fprintln(os.Stderr, "informer: --duration must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	var err error
	if cfg.kubeconfig != "" {
		err = watchCluster(ctx, cfg, os.Stdout)
	} else {
		err = runDemo(ctx, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "informer:", err)
		os.Exit(1)
	}
}

// printer is an event handler that prints each event on its own line.
func printer(out io.Writer) clientgocache.ResourceEventHandlerDetailedFuncs {
	name := func(obj interface{}) string {
		if d, ok := obj.(clientgocache.DeletedFinalStateUnknown); ok {
			return d.Key + " (deleted while no watch was open; found missing by a relist)"
		}
		cm := obj.(*corev1.ConfigMap)
		return cm.Namespace + "/" + cm.Name + "@" + cm.ResourceVersion
	}
	return clientgocache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, initial bool) {
			suffix := ""
			if initial {
				suffix = " (initial list)"
			}
			fmt.Fprintf(out, "added   %s%s\n", name(obj), suffix)
		},
		UpdateFunc: func(old, obj interface{}) {
			fmt.Fprintf(out, "updated %s (was @%s)\n", name(obj), old.(*corev1.ConfigMap).ResourceVersion)
		},
		DeleteFunc: func(obj interface{}) { fmt.Fprintf(out, "deleted %s\n", name(obj)) },
	}
}

// newInformer returns our shared informer over lw with printer(out) as its
// handler, and the handler's registration.
func newInformer(lw cache.ListerWatcher, out io.Writer) (cache.SharedIndexInformer, cache.ResourceEventHandlerRegistration, error) {
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	reg, err := inf.AddEventHandler(printer(out))
	return inf, reg, err
}

// start runs inf until ctx ends; wait returns once it has.
func start(ctx context.Context, inf cache.SharedIndexInformer) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	return func() { <-done }
}

func runDemo(ctx context.Context, out io.Writer) error {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	for _, n := range []string{"a", "b", "c"} {
		if _, err := cms.Create(ctx, newConfigMap(n, "1"), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	srv.Start()
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		return err
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
	inf, reg, err := newInformer(lw, out)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wait := start(rctx, inf)
	defer wait()
	// The registration is synced once the handler has seen the initial
	// list; WaitForSync says why not, if it does not.
	if err := reg.(cache.HandlerRegistration).WaitForSync(ctx); err != nil {
		return fmt.Errorf("informer did not sync: %w", err)
	}
	fmt.Fprintln(out, "-- synced; now changing the server and dropping the watch once, an injected fault:")
	fmt.Fprintln(out, "-- the Reflector may log that the watch ended early (a very short watch) and relist; that is the fault at work")
	if err := changes(ctx, cms); err != nil {
		return err
	}
	caughtUp := func() bool { return inf.LastSyncResourceVersion() == srv.ResourceVersion() }
	synced := clientgocache.WaitForCacheSync(ctx.Done(), caughtUp)
	cancel()
	wait()
	objs, _ := cms.Objects()
	d := cachetest.Compare(objs, inf.GetIndexer().List())
	fmt.Fprintf(out, "-- informer cache: %d objects; %s\n", len(inf.GetIndexer().ListKeys()), d)
	if !synced || !d.Empty() {
		return fmt.Errorf("the informer's cache does not match the server")
	}
	fmt.Fprintln(out, "OK: the informer's cache matches the server after the dropped watch")
	return nil
}

// changes updates, deletes and creates ConfigMaps, dropping every watch
// half way, so the Reflector has to resume without losing an event.
func changes(ctx context.Context, cms *cachetest.Resource) error {
	if _, err := cms.Update(ctx, newConfigMap("a", "2"), metav1.UpdateOptions{}); err != nil {
		return err
	}
	if _, err := cms.Delete(ctx, "demo", "b", metav1.DeleteOptions{}); err != nil {
		return err
	}
	cms.Server().CloseWatches()
	if _, err := cms.Create(ctx, newConfigMap("d", "1"), metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := cms.Update(ctx, newConfigMap("c", "2"), metav1.UpdateOptions{})
	return err
}

func newConfigMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}, Data: map[string]string{"v": value}}
}

// watchCluster runs the informer read-only on a real cluster until ctx ends.
func watchCluster(ctx context.Context, cfg config, out io.Writer) error {
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", cfg.namespace, fields.Everything())
	inf, _, err := newInformer(lw, out)
	if err != nil {
		return err
	}
	start(ctx, inf)()
	h := inf.(cache.InformerHealthReporter).Health()
	fmt.Fprintf(out, "-- informer cache: %d objects; %v\n", len(inf.GetIndexer().ListKeys()), h)
	return nil
}
