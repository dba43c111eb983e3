// Package cache is a drop-in reimplementation of client-go's tools/cache
// Reflector and the informers built on it, under client-go's public names:
// switching is a change of import, and client-go's ListWatch, DeltaFIFO,
// RealFIFO, Indexer, fake clientsets, SharedInformerFactory and
// controller-runtime's cache accept what this package makes.
//
// # Reflector
//
// A Reflector (NewReflector, NewNamedReflector, NewReflectorWithOptions)
// LISTs a resource in pages, or streams it as one WatchList, then WATCHes
// from the resulting resourceVersion with bookmarks, feeding every change
// into a ReflectorStore (NewStore, or any client-go store or FIFO). It
// keeps doing so through expired resourceVersions (410), throttling (429,
// with Retry-After), dropped connections and server restarts, with
// exponential backoff (ReflectorOptions.Backoff) and periodic resync.
// ReflectorOptions holds client-go's options and ours beyond them.
//
// # Informers
//
// NewSharedIndexInformer, NewSharedInformer,
// NewSharedIndexInformerWithOptions and the NewInformer family return
// client-go's interfaces (SharedIndexInformer, Controller, Indexer),
// driven by this package's Reflector. NewSharedIndexInformerWith gives all
// informers of a controller-runtime cache or an informer factory the same
// ReflectorOptions in one line; ReflectorConfigurable sets them on one
// informer. Each handler has its own goroutine and backlog (HandlerLimits,
// HandlerStats).
//
// # Health
//
// Reflector.Health, Reflector.WaitForSync and
// ReflectorOptions.OnHealthChange say whether the store is current and, if
// not, why (a DegradedReason and the last error): the contract is on
// Health. Informers report theirs and their handlers' through
// InformerHealthReporter. Reflectors and informers say when they have
// stopped (State Stopped; WaitForSync and WaitForShard return ErrStopped
// at once). A ListerWatcher call that returns nil and no error is a
// failed call (ErrNilResult), not a crash; an informer's index function
// that fails is a Degraded informer that relists (ErrIndexerFailed), not
// a crash.
//
// # Metrics
//
// Reflector.Stats is a snapshot of what a Reflector did; a
// ReflectorMetricsProvider (ReflectorOptions.Metrics) receives the same as
// metrics, declared in MetricDescs, without importing a metrics library.
//
// # Sharding
//
// A Shard (ReplicaShard, ParseShard, NewShard) set as ReflectorOptions.Shard
// makes a Reflector cache only its share of a resource, filtered by
// kube-apiserver's server-side sharding, and verified: a server that
// ignores the shard selector is reported (ErrShardIgnored,
// ReasonShardIgnored), never silently cached whole. SetShard and
// WaitForShard (Resharder) reshard a running Reflector or informer.
//
// The shard value itself (ranges, parsing, hashing) is package
// github.com/kreflector/cache/shard; Shard, ReplicaShard and ParseShard
// here are its names under this package. Package
// github.com/kreflector/cache/ring spreads a resource over replicas that
// find each other through Leases and hand buckets over as they come and
// go (elastic rings).
//
// # Lean objects
//
// ReflectorOptions.ReuseHeldObjects (on by default) keeps, on a relist,
// the object already held for an unchanged one and gives a changed one
// the held version's copy of every value they still share. ShareStrings
// and ShareMaps hold equal strings, byte slices and maps once, through a
// table each Reflector keeps of its own; DropManagedFields drops
// managedFields. Each applies page by page as a LIST arrives, so the peak
// of a sync falls too. Which stores each applies to, and in what order
// they run, are on the options.
//
// # Factories
//
// Packages github.com/kreflector/cache/informers and
// github.com/kreflector/cache/dynamicinformer are client-go's informer
// factories (k8s.io/client-go/informers and
// k8s.io/client-go/dynamic/dynamicinformer) on this package's informers:
// change the import path. client-go's typed per-group informer packages
// (informers/core/v1 and the like) and metadatainformer have no
// counterpart here yet.
//
// # Testing
//
// Package github.com/kreflector/cache/cachetest is a fake API server, in
// process and over HTTP, with failure injection by plain methods and a
// recording store, for honest tests of controllers built on either
// package.
package cache
