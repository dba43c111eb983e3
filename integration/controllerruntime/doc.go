// Package controllerruntime proves, in a module of its own so that the
// library's go.mod does not gain controller-runtime, that a
// controller-runtime Manager runs on kreflector's informers with one line:
//
//	mgr, err := manager.New(cfg, manager.Options{
//		Cache: crcache.Options{NewInformer: kcache.NewSharedIndexInformer},
//	})
//
// where kcache is github.com/kreflector/cache and crcache is
// sigs.k8s.io/controller-runtime/pkg/cache. The package holds only tests:
// against cachetest's server over HTTP (go test ./...) and, with the tag
// e2e, against a real kube-apiserver (hack/e2e.sh runs them).
package controllerruntime
