package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestClassify is the answer to "what happens after X?": for each place a
// call can fail and each error class the package knows, the step that
// follows, the stats label, the cause of the next sync, the effect on
// Health, the stale-RV streak, whether the backoff starts over and whether
// the resume position is given up. cycle.apply carries each row out.
func TestClassify(t *testing.T) {
	expired := apierrors.NewResourceExpired("too old resource version")
	gone := apierrors.NewGone("gone")
	throttled := apierrors.NewTooManyRequests("slow down", 7)
	internal := apierrors.NewInternalError(errors.New("etcd"))
	forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("no"))
	unauthorized := apierrors.NewUnauthorized("who are you")
	notFound := apierrors.NewNotFound(cmGVR, "")
	badRequest := apierrors.NewBadRequest("no")
	short := &VeryShortWatchError{Name: "r"}
	stalled := fmt.Errorf("%w: still open", ErrWatchStalled)
	resync := fmt.Errorf("%w: boom", errStoreResync)
	lost := errors.New("http2: client connection lost")
	shardIgnored := fmt.Errorf("%w: no shardInfo", ErrShardIgnored)
	at5 := facts{listRV: "5"}
	for _, tc := range classifyTable(expired, gone, throttled, internal, forbidden, unauthorized, notFound, badRequest, short, stalled, resync, lost, shardIgnored, at5) {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.where, tc.err, tc.facts); got != tc.want {
				t.Errorf("classify(%v, %v, %+v)\n got %+v\nwant %+v", tc.where, tc.err, tc.facts, got, tc.want)
			}
		})
	}
}

type classifyCase struct {
	name  string
	where where
	err   error
	facts facts
	want  outcome
}

func classifyTable(expired, gone, throttled, internal, forbidden, unauthorized, notFound, badRequest, short, stalled, resync, lost, shardIgnored error, at5 facts) []classifyCase {
	return concat(
		[]classifyCase{
			// A LIST failed (after its page retries).
			{"LIST 410 at an RV", atList, expired, at5,
				outcome{next: stepListLatest, relist: ListExpired, reached: true, forgetRV: true}},
			{"LIST too large at an RV", atList, tooLargeRV(), at5,
				outcome{next: stepListLatest, relist: ListTooLarge, reached: true, forgetRV: true}},
			{"LIST 400 at an RV (malformed RV)", atList, badRequest, at5,
				outcome{next: stepListLatest, relist: ListInvalidRV, reached: true, forgetRV: true}},
			{"LIST 410 at the latest", atList, expired, facts{},
				outcome{next: stepFail, relist: ListRetry, health: healthLoss, reason: ReasonListFailing}},
			{"LIST 400 at RV 0 (a malformed request: reported at once)", atList, badRequest, facts{listRV: "0"},
				outcome{next: stepFail, relist: ListRetry, health: healthNow, reason: ReasonRejected}},
			{"LIST with a shard selector the server cannot parse (kube-apiserver 1.37: 500)", atList, apierrors.NewInternalError(errors.New("invalid shard selector: unsupported field path")), at5,
				outcome{next: stepFail, relist: ListRetry, health: healthNow, reason: ReasonRejected}},
			{"LIST the server did not shard", atList, shardIgnored, at5,
				outcome{next: stepFail, relist: ListRetry, health: healthNow, reason: ReasonShardIgnored}},
			{"watch event outside the shard", atWatchStream, shardIgnored, facts{delivered: true},
				outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthNow, reason: ReasonShardIgnored, streak: streakReset, log: logWatchEnded}},
			{"a watch event the store refused", atWatchStream, fmt.Errorf("%w: MODIFIED ns/a: %w", ErrStoreRefused, errors.New("transform failed")), facts{delivered: true},
				outcome{next: stepRelist, end: WatchFailed, relist: ListStoreRefused, health: healthNow, reason: ReasonStoreFailing}},
			{"WatchList initial event outside the shard", atWatchListStream, shardIgnored, facts{},
				outcome{next: stepListInstead, relist: ListWatchListFallback, health: healthNow, reason: ReasonShardIgnored, end: WatchFailed, log: logWatchListToList}},
			{"LIST 403", atList, forbidden, at5,
				outcome{next: stepFail, relist: ListRetry, health: healthNow, reason: ReasonForbidden}},
			{"LIST 401", atList, unauthorized, at5,
				outcome{next: stepFail, relist: ListRetry, health: healthNow, reason: ReasonForbidden}},
			{"LIST 404", atList, notFound, at5,
				outcome{next: stepFail, relist: ListRetry, health: healthNow, reason: ReasonNotFound}},
			{"LIST 429", atList, throttled, at5,
				outcome{next: stepFail, relist: ListRetry, health: healthLoss, reason: ReasonThrottled, retryAfter: 7 * time.Second}},
			{"LIST refused", atList, connectionRefused(), at5,
				outcome{next: stepFail, relist: ListRetry, health: healthLoss, reason: ReasonUnreachable}},
			{"LIST 500", atList, internal, at5,
				outcome{next: stepFail, relist: ListRetry, health: healthLoss, reason: ReasonListFailing}},
			{"LIST other", atList, lost, at5,
				outcome{next: stepFail, relist: ListRetry, health: healthLoss, reason: ReasonListFailing}},
			{"LIST returned nil and no error (a broken ListerWatcher)", atList, errNilList, facts{},
				outcome{next: stepFail, relist: ListRetry, health: healthLoss, reason: ReasonListFailing}},

			// A page after the first of a paginated LIST failed.
			{"page 500", atListPage, internal, facts{}, outcome{next: stepRetryPage}},
			{"page 429", atListPage, throttled, facts{}, outcome{next: stepRetryPage, retryAfter: 7 * time.Second}},
			{"page refused", atListPage, connectionRefused(), facts{}, outcome{next: stepRetryPage}},
			{"page EOF", atListPage, io.ErrUnexpectedEOF, facts{}, outcome{next: stepRetryPage}},
			{"page server timeout", atListPage, apierrors.NewServerTimeout(cmGVR, "list", 1), facts{}, outcome{next: stepRetryPage}},
			{"page 410 (token expired)", atListPage, expired, facts{}, outcome{next: stepListWhole}},
			{"page 410 Gone", atListPage, gone, facts{}, outcome{next: stepFail}},
			{"page 403", atListPage, forbidden, facts{}, outcome{next: stepFail}},
			{"page cancelled", atListPage, context.Canceled, facts{}, outcome{next: stepFail}},
			{"page returned nil and no error", atListPage, errNilList, facts{}, outcome{next: stepFail}},

			// The store refused the synced state.
			{"Replace after LIST", atListReplace, lost, facts{},
				outcome{next: stepFail, relist: ListRetry, health: healthLoss, reason: ReasonListFailing}},
			{"Replace after WatchList", atWatchListReplace, lost, facts{},
				outcome{next: stepListInstead, relist: ListRetry, health: healthLoss, reason: ReasonListFailing, log: logReplaceToList}},

			// A quiet watch's connection did not answer a check: a silent
			// death, and the watch goes on.
			{"quiet check unanswered", atQuietCheck, fmt.Errorf("%w: %w", ErrQuietCheckFailed, context.DeadlineExceeded), facts{},
				outcome{next: stepWatchOn, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, silent: true, log: logQuietCheck}},

			// The store's Resync failed while watching.
			{"Resync", atResync, resync, facts{},
				outcome{next: stepRelist, end: WatchResyncFailed, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, log: logWatchEnded}},

			// An informer's indexer failed to apply a change its queue had
			// accepted, and asked for a relist, which ended the cycle.
			{"indexer failed", atIndexer, fmt.Errorf("%w: index \"x\" failed on ns/a: %w", ErrIndexerFailed, errors.New("boom")), facts{},
				outcome{next: stepRelist, relist: ListStoreRefused, health: healthNow, reason: ReasonStoreFailing}},
		},
		watchOpenRows(expired, throttled, internal, forbidden, unauthorized, notFound, lost),
		watchStreamRows(expired, gone, throttled, internal, forbidden, short, stalled, resync, lost),
		watchListRows(expired, throttled, internal, forbidden, badRequest, short, lost),
	)
}

func watchOpenRows(expired, throttled, internal, forbidden, unauthorized, notFound, lost error) []classifyCase {
	return []classifyCase{
		{"open 429", atWatchOpen, throttled, facts{},
			outcome{next: stepBackoffRewatch, end: WatchThrottled, relist: ListWatchError, health: healthLoss, reason: ReasonThrottled, retryAfter: 7 * time.Second, log: logWatchBackoff}},
		{"open refused", atWatchOpen, connectionRefused(), facts{},
			outcome{next: stepBackoffRewatch, end: WatchUnreachable, relist: ListWatchError, health: healthLoss, reason: ReasonUnreachable, log: logWatchBackoff}},
		{"open 410", atWatchOpen, expired, facts{},
			outcome{next: stepRelist, end: WatchExpired, relist: ListExpired, health: healthLoss, reason: ReasonWatchFailing, streak: streakCount, reached: true, log: logWatchNotOpened}},
		{"open too large", atWatchOpen, tooLargeRV(), facts{},
			outcome{next: stepRelist, end: WatchTooLarge, relist: ListTooLarge, health: healthLoss, reason: ReasonWatchFailing, streak: streakCount, reached: true, log: logWatchNotOpened}},
		{"open 403", atWatchOpen, forbidden, facts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthNow, reason: ReasonForbidden, streak: streakReset, log: logWatchNotOpened}},
		{"open 401", atWatchOpen, unauthorized, facts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthNow, reason: ReasonForbidden, streak: streakReset, log: logWatchNotOpened}},
		{"open 404", atWatchOpen, notFound, facts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthNow, reason: ReasonNotFound, streak: streakReset, log: logWatchNotOpened}},
		{"open 500", atWatchOpen, internal, facts{},
			outcome{next: stepRelist, end: WatchInternalError, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset, log: logWatchNotOpened}},
		{"open other", atWatchOpen, lost, facts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset, log: logWatchNotOpened}},
		{"open returned nil and no error (a broken ListerWatcher)", atWatchOpen, errNilWatch, facts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset, log: logWatchNotOpened}},
	}
}

func watchStreamRows(expired, gone, throttled, internal, forbidden, short, stalled, resync, lost error) []classifyCase {
	retry := facts{internalRetry: true, delivered: true}
	return []classifyCase{
		{"closed by the server", atWatchStream, nil, facts{},
			outcome{next: stepRewatch, end: WatchClosed, relist: ListWatchError, streak: streakReset}},
		{"closed empty within the grace", atWatchStream, nil, facts{empty: true},
			outcome{next: stepRewatch, end: WatchClosed, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset}},
		{"very short", atWatchStream, short, facts{},
			outcome{next: stepRelist, end: WatchVeryShort, relist: ListShortWatch, health: healthLoss, reason: ReasonWatchFailing, streak: streakCount, log: logWatchEnded}},
		{"410 expired", atWatchStream, expired, facts{},
			outcome{next: stepRelist, end: WatchExpired, relist: ListExpired, health: healthLoss, reason: ReasonWatchFailing, streak: streakCount, reached: true, log: logWatchExpired}},
		{"410 gone", atWatchStream, gone, facts{},
			outcome{next: stepRelist, end: WatchExpired, relist: ListExpired, health: healthLoss, reason: ReasonWatchFailing, streak: streakCount, reached: true, log: logWatchExpired}},
		{"too large", atWatchStream, tooLargeRV(), facts{},
			outcome{next: stepRelist, end: WatchTooLarge, relist: ListTooLarge, health: healthLoss, reason: ReasonWatchFailing, streak: streakCount, reached: true, log: logWatchEnded}},
		{"429", atWatchStream, throttled, facts{},
			outcome{next: stepBackoffRewatch, end: WatchThrottled, relist: ListWatchError, health: healthLoss, reason: ReasonThrottled, streak: streakReset, retryAfter: 7 * time.Second, log: logWatchThrottled}},
		{"stalled", atWatchStream, stalled, facts{},
			outcome{next: stepRewatch, end: WatchStalled, relist: ListWatchError, health: healthNow, reason: ReasonStalled, streak: streakReset, log: logWatchStalled}},
		{"500 within the retry window, after events", atWatchStream, internal, retry,
			outcome{next: stepRewatch, end: WatchInternalError, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset, log: logWatchRetry500}},
		{"500 within the retry window, nothing delivered, default backoff and clock", atWatchStream, internal, facts{internalRetry: true, pace: true},
			outcome{next: stepBackoffRewatch, end: WatchInternalError, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset, log: logWatchEnded}},
		{"500 within the retry window, nothing delivered, the user's backoff or clock", atWatchStream, internal, facts{internalRetry: true},
			outcome{next: stepRewatch, end: WatchInternalError, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset, log: logWatchRetry500}},
		{"500 past the retry window", atWatchStream, internal, facts{delivered: true},
			outcome{next: stepRelist, end: WatchInternalError, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset, log: logWatchEnded}},
		{"403 event", atWatchStream, forbidden, facts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthNow, reason: ReasonForbidden, streak: streakReset, log: logWatchEnded}},
		{"connection lost (HTTP/2 health check): the loss dates from the last sign of life", atWatchStream, lost, facts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset, silent: true, log: logWatchEnded}},
		{"read timed out: likewise", atWatchStream, &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, facts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset, silent: true, log: logWatchEnded}},
		{"connection reset: the loss begins now", atWatchStream, syscall.ECONNRESET, facts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing, streak: streakReset, log: logWatchEnded}},
	}
}

func watchListRows(expired, throttled, internal, forbidden, badRequest, short, lost error) []classifyCase {
	return []classifyCase{
		{"WatchList open 429", atWatchListOpen, throttled, facts{},
			outcome{next: stepBackoffRewatch, end: WatchThrottled, relist: ListRetry, health: healthLoss, reason: ReasonThrottled, retryAfter: 7 * time.Second, log: logWatchListRetry}},
		{"WatchList open refused", atWatchListOpen, connectionRefused(), facts{},
			outcome{next: stepBackoffRewatch, end: WatchUnreachable, relist: ListRetry, health: healthLoss, reason: ReasonUnreachable, log: logWatchListRetry}},
		{"WatchList open 410", atWatchListOpen, expired, facts{},
			outcome{next: stepRewatch, end: WatchExpired, relist: ListExpired, reached: true, forgetRV: true}},
		{"WatchList open too large", atWatchListOpen, tooLargeRV(), facts{},
			outcome{next: stepRewatch, end: WatchTooLarge, relist: ListTooLarge, reached: true, forgetRV: true}},
		{"WatchList refused (400)", atWatchListOpen, badRequest, facts{},
			outcome{next: stepListInstead, end: WatchFailed, relist: ListWatchListFallback, log: logWatchListToList, refusedWatchList: true}},
		{"WatchList open 403 (the LIST reports it)", atWatchListOpen, forbidden, facts{},
			outcome{next: stepListInstead, end: WatchFailed, relist: ListWatchListFallback, log: logWatchListToList}},
		{"WatchList open returned nil and no error (the LIST, and the watch after it, report it)", atWatchListOpen, errNilWatch, facts{},
			outcome{next: stepListInstead, end: WatchFailed, relist: ListWatchListFallback, log: logWatchListToList}},
		{"WatchList closed before its end", atWatchListStream, nil, facts{},
			outcome{next: stepBackoffRewatch, end: WatchClosed, relist: ListRetry, health: healthLoss, reason: ReasonListFailing, log: logWatchListRetry}},
		{"WatchList closed before its end, bound reached", atWatchListStream, nil, facts{gaveUp: true},
			outcome{next: stepListInstead, end: WatchClosed, relist: ListWatchListFallback, health: healthLoss, reason: ReasonListFailing, log: logWatchListGaveUp}},
		{"WatchList very short", atWatchListStream, short, facts{},
			outcome{next: stepListInstead, end: WatchVeryShort, relist: ListWatchListFallback, health: healthLoss, reason: ReasonListFailing, log: logWatchListToList}},
		{"WatchList stream 410", atWatchListStream, expired, facts{},
			outcome{next: stepRewatch, end: WatchExpired, relist: ListExpired, reached: true, forgetRV: true}},
		{"WatchList stream 429", atWatchListStream, throttled, facts{},
			outcome{next: stepBackoffRewatch, end: WatchThrottled, relist: ListRetry, health: healthLoss, reason: ReasonThrottled, retryAfter: 7 * time.Second, log: logWatchListRetry}},
		{"WatchList stream 500", atWatchListStream, internal, facts{},
			outcome{next: stepListInstead, end: WatchInternalError, relist: ListWatchListFallback, health: healthLoss, reason: ReasonListFailing, log: logWatchListToList}},
		{"WatchList stream 403", atWatchListStream, forbidden, facts{},
			outcome{next: stepListInstead, end: WatchFailed, relist: ListWatchListFallback, health: healthNow, reason: ReasonForbidden, log: logWatchListToList}},
		{"WatchList connection lost", atWatchListStream, lost, facts{},
			outcome{next: stepListInstead, end: WatchFailed, relist: ListWatchListFallback, health: healthLoss, reason: ReasonListFailing, log: logWatchListToList}},
	}
}

func concat[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// A failure that completes a stale-RV streak relists with a consistent
// read and is reported at once, whatever the failure alone would do.
func TestStaleLoopOutcome(t *testing.T) {
	o := classify(atWatchStream, &VeryShortWatchError{}, facts{}).breaksStaleLoop()
	want := outcome{next: stepRelist, end: WatchVeryShort, relist: ListStaleRVBreaker, health: healthNow, reason: ReasonStaleRVLoop, streak: streakCount, forgetRV: true, log: logStaleLoop}
	if o != want {
		t.Fatalf("got %+v\nwant %+v", o, want)
	}
}
