// Package controllerruntime proves, in a module of its own so that the
// library's go.mod does not gain controller-runtime, that a
// controller-runtime Manager runs on kreflector's informers with one line:
//
//	mgr, err := manager.New(cfg, manager.Options{
//		Cache: crcache.Options{NewInformer: kcache.NewSharedIndexInformer},
//	})
//
// where kcache is github.com/kreflector/cache and crcache is
// sigs.k8s.io/controller-runtime/pkg/cache.
//
// It also puts controllers on an elastic ring (package
// github.com/kreflector/cache/ring), one line each: the cache's informers
// follow the ring with crcache.Options{NewInformer: r.NewInformer}; the
// ring runs on every replica, started with the caches, by AddRing(mgr, r)
// (plain mgr.Add(r) would start it after them, which holds the start
// forever when an informer is made before it), and ends the manager with
// the ring's cause when the ring cannot work (its Leases forbidden, say)
// rather than with a bare cache sync timeout; and Elastic's Reconciler drops the
// requests for objects this replica released since they were queued,
// while its Drain, as ring.Config.Drain, holds a release back until the
// reconciles in progress of the released buckets have returned (see
// Elastic and docs/sharding.md).
//
// Its tests run against cachetest's server over HTTP (go test ./...) and,
// with the tag e2e, against a real kube-apiserver (hack/e2e.sh runs them).
package controllerruntime
