package ring_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/cachetest"
	"github.com/kreflector/cache/ring"
)

// One replica of a ring: it joins, finds itself alone, handles every
// bucket, and its handler sees every object. Leases live on a fake
// clientset here; in a cluster, Client is a real clientset's
// CoordinationV1().
func Example() {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close()
	cms := srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 3 {
		_, _ = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
	}

	r, err := ring.New(ring.Config{
		Client: fake.NewClientset().CoordinationV1(), Namespace: "kube-system", Name: "my-controller", Identity: "replica-0",
		LeaseDuration: time.Second, RenewDeadline: 800 * time.Millisecond, RetryPeriod: 100 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	inf := r.NewInformer(cms, &corev1.ConfigMap{}, 0, clientgocache.Indexers{})
	var added atomic.Int32
	_, _ = inf.AddEventHandler(clientgocache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) { added.Add(1) }})

	informerDone, ringDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(informerDone); inf.RunWithContext(ctx) }()
	go func() { defer close(ringDone); _ = r.Run(ctx) }() // on cancel it leaves: releases, deletes its Lease
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := inf.(*ring.Informer).WaitForSync(wait); err != nil {
		panic(err)
	}
	for added.Load() < 3 && wait.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	s := r.Status()
	fmt.Printf("members %d, handling %d of %d buckets, %d adds\n", s.Members, s.Handling, s.Buckets, added.Load())
	cancel()
	<-informerDone
	<-ringDone
	// Output: members 1, handling 1024 of 1024 buckets, 3 adds
}
