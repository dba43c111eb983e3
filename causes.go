package cache

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
)

// ListCause says why the Reflector fetched the whole state of its resource
// (by LIST or by WatchList). The set is fixed; it labels metrics.
type ListCause string

const (
	// ListInitial: the first sync of the Reflector.
	ListInitial ListCause = "initial"
	// ListExpired: the resourceVersion to resume from was compacted away.
	ListExpired ListCause = "expired"
	// ListTooLarge: the server had not caught up with the resourceVersion.
	ListTooLarge ListCause = "too_large"
	// ListShortWatch: a watch closed within a second with no event.
	ListShortWatch ListCause = "short_watch"
	// ListWatchListFallback: the server refused a WatchList stream.
	ListWatchListFallback ListCause = "watch_list_fallback"
	// ListStaleRVBreaker: watches kept failing at one resourceVersion and
	// the loop breaker asked for a consistent read.
	ListStaleRVBreaker ListCause = "stale_rv_breaker"
	// ListWatchError: the watch ended with another error (opening it failed,
	// internal errors outlived MaxInternalErrorRetryDuration, a store
	// Resync failed, or an unclassified error).
	ListWatchError ListCause = "watch_error"
	// ListRetry: the previous attempt to sync failed and is repeated.
	ListRetry ListCause = "retry"
	// ListInvalidRV: the server rejected the resourceVersion to list at as
	// malformed (it came from an object with a broken one).
	ListInvalidRV ListCause = "invalid_rv"
	// ListReshard: the Reflector's shard changed (Reflector.SetShard) and
	// the new one could not be merged into the store (see
	// Stats.ReshardFallbacks): the whole shard is listed again.
	ListReshard ListCause = "reshard"
	// ListReshardAdded: the Reflector's shard changed and only the ranges
	// it added are listed, then merged into the store (see SetShard).
	ListReshardAdded ListCause = "reshard_added"
	// ListStoreRefused: the store refused a watch event (ErrStoreRefused),
	// or an informer's indexer failed to apply a change (ErrIndexerFailed);
	// the relist brings it back in line with the server.
	ListStoreRefused ListCause = "store_refused"
)

// ListCauses is every ListCause, in a fixed order.
var ListCauses = []ListCause{ListInitial, ListExpired, ListTooLarge, ListShortWatch, ListWatchListFallback, ListStaleRVBreaker, ListWatchError, ListRetry, ListInvalidRV, ListReshard, ListReshardAdded, ListStoreRefused}

// ReshardFallback says why a changed shard was synced by listing it
// whole instead of merging what changed into the store.
type ReshardFallback string

const (
	// FallbackNotSynced: no sync had completed yet; the first one lists.
	FallbackNotSynced ReshardFallback = "not_synced"
	// FallbackKeyChanged: the new shard hashes another key than the one
	// the store was filled by.
	FallbackKeyChanged ReshardFallback = "key_changed"
	// FallbackIncomparable: the resume position is not an integer
	// resourceVersion (kube-apiserver's are; KEP-5504), so events older
	// than the merged objects cannot be told apart.
	FallbackIncomparable ReshardFallback = "incomparable_resource_version"
	// FallbackUnavailable: the resume position is no longer served (410).
	FallbackUnavailable ReshardFallback = "resource_version_unavailable"
	// FallbackStoreUnlistable: the store cannot say what it holds (a
	// queue that is not an informer's).
	FallbackStoreUnlistable ReshardFallback = "store_unlistable"
	// FallbackListFailed: the LIST of the added ranges or the store's
	// Replace failed; the whole shard is listed, with the usual backoff.
	FallbackListFailed ReshardFallback = "list_failed"
	// FallbackAsked: ReflectorOptions.ReshardByRelist asked for relists.
	FallbackAsked ReshardFallback = "asked"
	// FallbackPerObjectQueue: the informer's queue emits a delta per
	// object (client-go's AtomicFIFO gate is off), so a merge could not be
	// applied in order with the watch events queued before it.
	FallbackPerObjectQueue ReshardFallback = "per_object_queue"
)

// ReshardFallbacks is every ReshardFallback, in a fixed order.
var ReshardFallbacks = []ReshardFallback{FallbackNotSynced, FallbackKeyChanged, FallbackIncomparable, FallbackUnavailable, FallbackStoreUnlistable, FallbackListFailed, FallbackAsked, FallbackPerObjectQueue}

// WatchEndCause says why a watch (or WatchList) ended, or why a request
// to open one failed, while the Reflector was running: Stats.WatchEnds and
// the watch-ends metric count both. The set is fixed; it labels metrics.
type WatchEndCause string

const (
	// WatchClosed: the server closed the watch normally (for example at
	// its timeout); the Reflector resumes from the last resourceVersion.
	WatchClosed   WatchEndCause = "closed"
	WatchExpired  WatchEndCause = "expired"
	WatchTooLarge WatchEndCause = "too_large"
	// WatchVeryShort: closed within a second with no event.
	WatchVeryShort WatchEndCause = "very_short"
	// WatchThrottled: 429 when opening or on the stream.
	WatchThrottled WatchEndCause = "throttled"
	// WatchUnreachable: the connection was refused when opening.
	WatchUnreachable WatchEndCause = "unreachable"
	// WatchInternalError: a 500 on the stream, or in answer to the
	// request to open it.
	WatchInternalError WatchEndCause = "internal_error"
	// WatchStalled: silent for the stall window after a bookmark, or that
	// long past the watch's requested timeout (see StallWindow).
	WatchStalled WatchEndCause = "stalled"
	// WatchResyncFailed: the store's Resync returned an error.
	WatchResyncFailed WatchEndCause = "resync_failed"
	// WatchFailed: any other error, including failing to open the watch.
	WatchFailed WatchEndCause = "error"
)

// WatchEndCauses is every WatchEndCause, in a fixed order.
var WatchEndCauses = []WatchEndCause{WatchClosed, WatchExpired, WatchTooLarge, WatchVeryShort, WatchThrottled, WatchUnreachable, WatchInternalError, WatchStalled, WatchResyncFailed, WatchFailed}

// EventDropped labels watch events the Reflector skipped because they
// carried an object it cannot store (see ErrUnexpectedObject).
const EventDropped watch.EventType = "DROPPED"

// EventTypes is every event type counted in Stats.Events, in a fixed order.
var EventTypes = []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error, EventDropped}

// unavailableCause is the cause of a sync repeated at RV "" because the
// resourceVersion asked for could not be served (err).
func unavailableCause(err error) ListCause {
	switch {
	case isTooLargeResourceVersionError(err):
		return ListTooLarge
	case isExpiredError(err):
		return ListExpired
	}
	return ListInvalidRV
}

// watchEndCause classifies how a watch ended (or failed to open); nil is
// a normal close.
func watchEndCause(err error) WatchEndCause {
	var short *VeryShortWatchError
	switch {
	case err == nil:
		return WatchClosed
	case isExpiredError(err):
		return WatchExpired
	case isTooLargeResourceVersionError(err):
		return WatchTooLarge
	case errors.As(err, &short):
		return WatchVeryShort
	case apierrors.IsTooManyRequests(err):
		return WatchThrottled
	case utilnet.IsConnectionRefused(err):
		return WatchUnreachable
	case errors.Is(err, ErrWatchStalled):
		return WatchStalled
	case errors.Is(err, errStoreResync):
		return WatchResyncFailed
	case apierrors.IsInternalError(err):
		return WatchInternalError
	}
	return WatchFailed
}

// relistCause is the cause of the sync that follows a watch that ended
// for c, should the cycle end there.
func relistCause(c WatchEndCause) ListCause {
	switch c {
	case WatchExpired:
		return ListExpired
	case WatchTooLarge:
		return ListTooLarge
	case WatchVeryShort:
		return ListShortWatch
	}
	return ListWatchError
}
