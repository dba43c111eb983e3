package cache

import (
	"context"
	"time"

	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Waiting on informers and retrying, client-go's own. These wait on
// HasSynced or DoneChecker and so say only whether something synced; our
// informers' and Reflectors' WaitForSync(ctx) error also says why not.

type (
	// SyncResult is what a factory's WaitForCacheSyncWithContext returns.
	SyncResult = clientgocache.SyncResult
	// RetryWithDeadline decides whether to retry after an error, within a
	// deadline since the first error.
	RetryWithDeadline = clientgocache.RetryWithDeadline
)

// WaitForNamedCacheSyncWithContext is client-go's function of that name:
// WaitForCacheSync until ctx ends, logging through ctx's logger.
func WaitForNamedCacheSyncWithContext(ctx context.Context, cacheSyncs ...InformerSynced) bool {
	return clientgocache.WaitForNamedCacheSyncWithContext(ctx, cacheSyncs...)
}

// WaitFor is client-go's WaitFor: true once every checker is done, false
// if ctx ends first; it logs what it waits for under what.
func WaitFor(ctx context.Context, what string, checkers ...DoneChecker) bool {
	return clientgocache.WaitFor(ctx, what, checkers...)
}

// IsDone is client-go's IsDone: whether checker's channel is closed, without
// blocking.
func IsDone(checker DoneChecker) bool { return clientgocache.IsDone(checker) }

// NewRetryWithDeadline is client-go's NewRetryWithDeadline.
func NewRetryWithDeadline(maxRetryDuration, minResetPeriod time.Duration, isRetryable func(error) bool, clock clock.Clock) RetryWithDeadline {
	return clientgocache.NewRetryWithDeadline(maxRetryDuration, minResetPeriod, isRetryable, clock)
}
