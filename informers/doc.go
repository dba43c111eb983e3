// Package informers is a drop-in for k8s.io/client-go/informers whose
// factory hands out this module's informers (the Reflector and
// SharedIndexInformer of github.com/kreflector/cache) for every built-in
// resource: change the import path and keep the rest of the program.
//
// The factory implements client-go's informers.SharedInformerFactory, so
// it can be passed to code that expects client-go's. Each informer it
// builds (f.Core().V1().ConfigMaps().Informer(), f.ForResource(gvr)) is
// this module's and type-asserts to cache.InformerHealthReporter; the
// factory's own WaitForSync and Health cover all of them at once.
// Listers are client-go's, over that informer's indexer.
//
// Below it, every group and version package of client-go's informers
// (core/v1, apps/v1, ...) and internalinterfaces is here as ours, under
// the same path: client-go's interfaces, listers and other types as
// aliases, and New and every constructor (NewPodInformer,
// NewFilteredPodInformer, their typed and WithOptions variants) with
// client-go's signature, building this module's informers. The factory's
// accessors are those packages' New.
//
// All of it is generated from client-go's source by ./internal/gen/run
// (the zz_generated.go files, and zz_generated_test.go, which checks that
// every exported name of client-go's packages is ours with the identical
// type); a test fails when a checked-in file differs from what the
// generator would write, or when it would no longer write one.
package informers

//go:generate go run ./internal/gen/run
