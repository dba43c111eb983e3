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
// The group, version and resource accessors are generated from
// client-go's source by ./internal/gen/run (zz_generated.go); a test
// fails when the checked-in file differs from what it would write.
package informers

//go:generate go run ./internal/gen/run
