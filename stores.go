package cache

import (
	"time"

	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// client-go's other stores and store helpers, unchanged: thread-safe
// storage with transactions, expiring stores, the mutation cache and
// detector. Each name is client-go's own; our Reflector fills any of them.

type (
	// ThreadSafeStore is client-go's locked map with indexes, under Indexer.
	ThreadSafeStore = clientgocache.ThreadSafeStore
	// ThreadSafeStoreOption configures NewThreadSafeStore.
	ThreadSafeStoreOption = clientgocache.ThreadSafeStoreOption
	// ThreadSafeStoreWithTransaction is a ThreadSafeStore that applies
	// several changes under one lock.
	ThreadSafeStoreWithTransaction = clientgocache.ThreadSafeStoreWithTransaction
	// ThreadSafeStoreTransaction is one change of such a transaction.
	ThreadSafeStoreTransaction = clientgocache.ThreadSafeStoreTransaction
	// TransactionStore is a Store that applies several changes under one
	// lock.
	TransactionStore = clientgocache.TransactionStore
	// Transaction is one change of a TransactionStore's transaction.
	Transaction = clientgocache.Transaction
	// TransactionType says what a Transaction does.
	TransactionType = clientgocache.TransactionType
	// TransactionError lists the changes of a transaction that failed.
	TransactionError = clientgocache.TransactionError
	// ExpirationCache is client-go's store whose entries expire by policy.
	ExpirationCache = clientgocache.ExpirationCache
	// ExpirationPolicy decides when an ExpirationCache entry expires.
	ExpirationPolicy = clientgocache.ExpirationPolicy
	// TTLPolicy expires entries older than a time to live.
	TTLPolicy = clientgocache.TTLPolicy
	// TimestampedEntry is an ExpirationCache entry with its time of entry.
	TimestampedEntry = clientgocache.TimestampedEntry
	// FakeExpirationPolicy is client-go's ExpirationPolicy for tests.
	FakeExpirationPolicy = clientgocache.FakeExpirationPolicy
	// FakeCustomStore is client-go's Store of settable functions, for tests.
	FakeCustomStore = clientgocache.FakeCustomStore
	// MutationCache overlays a store with the objects a controller has just
	// written, until the store catches up.
	MutationCache = clientgocache.MutationCache
	// MutationCacheOptions configures
	// NewIntegerResourceVersionMutationCacheWithOptions.
	MutationCacheOptions = clientgocache.MutationCacheOptions
	// ResourceVersionComparator orders two objects by resourceVersion.
	ResourceVersionComparator = clientgocache.ResourceVersionComparator
	// MutationDetector checks that cached objects are not mutated (with
	// KUBE_CACHE_MUTATION_DETECTOR=true, as in client-go).
	MutationDetector = clientgocache.MutationDetector
)

// The kinds of Transaction, client-go's values.
const (
	TransactionTypeAdd    = clientgocache.TransactionTypeAdd
	TransactionTypeUpdate = clientgocache.TransactionTypeUpdate
	TransactionTypeDelete = clientgocache.TransactionTypeDelete
)

// NewThreadSafeStore is client-go's NewThreadSafeStore.
func NewThreadSafeStore(indexers Indexers, indices Indices, opts ...ThreadSafeStoreOption) ThreadSafeStore {
	return clientgocache.NewThreadSafeStore(indexers, indices, opts...)
}

// WithThreadSafeStoreMetrics is client-go's WithThreadSafeStoreMetrics.
func WithThreadSafeStoreMetrics(identifier InformerNameAndResource, metricsProvider InformerMetricsProvider) ThreadSafeStoreOption {
	return clientgocache.WithThreadSafeStoreMetrics(identifier, metricsProvider)
}

// WithTransformer is client-go's WithTransformer: a store built with it
// transforms objects before keeping them. NewStore and NewIndexer accept it.
func WithTransformer(transformer TransformFunc) StoreOption {
	return clientgocache.WithTransformer(transformer)
}

// WithStoreMetrics is client-go's WithStoreMetrics: a store built with it
// reports its resourceVersion through the informer metrics provider.
func WithStoreMetrics(identifier InformerNameAndResource, metrics InformerMetricsProvider) StoreOption {
	return clientgocache.WithStoreMetrics(identifier, metrics)
}

// NewExpirationStore is client-go's NewExpirationStore.
func NewExpirationStore(keyFunc KeyFunc, expirationPolicy ExpirationPolicy) Store {
	return clientgocache.NewExpirationStore(keyFunc, expirationPolicy)
}

// NewTTLStore is client-go's NewTTLStore.
func NewTTLStore(keyFunc KeyFunc, ttl time.Duration) Store {
	return clientgocache.NewTTLStore(keyFunc, ttl)
}

// NewFakeExpirationStore is client-go's NewFakeExpirationStore, for tests.
func NewFakeExpirationStore(keyFunc KeyFunc, deletedKeys chan<- string, expirationPolicy ExpirationPolicy, cacheClock clock.Clock) Store {
	return clientgocache.NewFakeExpirationStore(keyFunc, deletedKeys, expirationPolicy, cacheClock)
}

// NewIntegerResourceVersionMutationCache is client-go's function of that
// name.
func NewIntegerResourceVersionMutationCache(logger klog.Logger, backingCache Store, indexer Indexer, ttl time.Duration, includeAdds bool) MutationCache {
	return clientgocache.NewIntegerResourceVersionMutationCache(logger, backingCache, indexer, ttl, includeAdds)
}

// NewIntegerResourceVersionMutationCacheWithOptions is client-go's function
// of that name.
func NewIntegerResourceVersionMutationCacheWithOptions(logger klog.Logger, backingCache Store, options MutationCacheOptions) MutationCache {
	return clientgocache.NewIntegerResourceVersionMutationCacheWithOptions(logger, backingCache, options)
}

// NewCacheMutationDetector is client-go's NewCacheMutationDetector.
func NewCacheMutationDetector(name string) MutationDetector {
	return clientgocache.NewCacheMutationDetector(name)
}
