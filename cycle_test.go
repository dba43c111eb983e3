package cache

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestClassifyWatch is the answer to "what happens after X on a watch?":
// for each place a watch can fail and each error class the package knows,
// the step that follows, the stats label, the cause of the sync that may
// follow, the effect on Health, the stale-RV streak, and whether the
// backoff starts over.
func TestClassifyWatch(t *testing.T) {
	expired := apierrors.NewResourceExpired("too old resource version")
	gone := apierrors.NewGone("gone")
	throttled := apierrors.NewTooManyRequests("slow down", 7)
	internal := apierrors.NewInternalError(errors.New("etcd"))
	forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("no"))
	unauthorized := apierrors.NewUnauthorized("who are you")
	notFound := apierrors.NewNotFound(cmGVR, "")
	short := &VeryShortWatchError{Name: "r"}
	stalled := fmt.Errorf("%w: still open", ErrWatchStalled)
	resync := fmt.Errorf("%w: boom", errStoreResync)
	lost := errors.New("http2: client connection lost")
	retry := watchFacts{internalRetry: true}
	empty := watchFacts{empty: true}

	tests := []struct {
		name  string
		where where
		err   error
		facts watchFacts
		want  outcome
	}{
		// Opening the watch failed.
		{"open 429", atWatchOpen, throttled, watchFacts{},
			outcome{next: stepBackoffRewatch, end: WatchThrottled, relist: ListWatchError, health: healthNow, reason: ReasonThrottled, streak: streakKeep, retryAfter: 7 * time.Second}},
		{"open refused", atWatchOpen, connectionRefused(), watchFacts{},
			outcome{next: stepBackoffRewatch, end: WatchUnreachable, relist: ListWatchError, health: healthNow, reason: ReasonUnreachable, streak: streakKeep}},
		{"open 410", atWatchOpen, expired, watchFacts{},
			outcome{next: stepRelist, end: WatchExpired, relist: ListExpired, health: healthNow, reason: ReasonWatchFailing, streak: streakCount, reached: true}},
		{"open too large", atWatchOpen, tooLargeRV(), watchFacts{},
			outcome{next: stepRelist, end: WatchTooLarge, relist: ListTooLarge, health: healthNow, reason: ReasonWatchFailing, streak: streakCount, reached: true}},
		{"open 403", atWatchOpen, forbidden, watchFacts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthNow, reason: ReasonForbidden}},
		{"open 401", atWatchOpen, unauthorized, watchFacts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthNow, reason: ReasonForbidden}},
		{"open 404", atWatchOpen, notFound, watchFacts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthNow, reason: ReasonNotFound}},
		{"open 500", atWatchOpen, internal, watchFacts{},
			outcome{next: stepRelist, end: WatchInternalError, relist: ListWatchError, health: healthNow, reason: ReasonWatchFailing}},
		{"open other", atWatchOpen, lost, watchFacts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthNow, reason: ReasonWatchFailing}},

		// An open watch ended.
		{"closed by the server", atWatchStream, nil, watchFacts{},
			outcome{next: stepRewatch, end: WatchClosed, relist: ListWatchError, endsStall: true}},
		{"closed empty within the grace", atWatchStream, nil, empty,
			outcome{next: stepRewatch, end: WatchClosed, relist: ListWatchError, endsStall: true, health: healthLoss, reason: ReasonWatchFailing}},
		{"very short", atWatchStream, short, watchFacts{},
			outcome{next: stepRelist, end: WatchVeryShort, relist: ListShortWatch, health: healthLoss, reason: ReasonWatchFailing, streak: streakCount}},
		{"410 expired", atWatchStream, expired, watchFacts{},
			outcome{next: stepRelist, end: WatchExpired, relist: ListExpired, health: healthLoss, reason: ReasonWatchFailing, streak: streakCount, reached: true}},
		{"410 gone", atWatchStream, gone, watchFacts{},
			outcome{next: stepRelist, end: WatchExpired, relist: ListExpired, health: healthLoss, reason: ReasonWatchFailing, streak: streakCount, reached: true}},
		{"too large", atWatchStream, tooLargeRV(), watchFacts{},
			outcome{next: stepRelist, end: WatchTooLarge, relist: ListTooLarge, health: healthLoss, reason: ReasonWatchFailing, streak: streakCount, reached: true}},
		{"429", atWatchStream, throttled, watchFacts{},
			outcome{next: stepBackoffRewatch, end: WatchThrottled, relist: ListWatchError, health: healthNow, reason: ReasonThrottled, retryAfter: 7 * time.Second}},
		{"stalled", atWatchStream, stalled, watchFacts{},
			outcome{next: stepRewatch, end: WatchStalled, relist: ListWatchError, health: healthNow, reason: ReasonStalled, stalls: true}},
		{"500 within the retry window", atWatchStream, internal, retry,
			outcome{next: stepRewatch, end: WatchInternalError, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing}},
		{"500 past the retry window", atWatchStream, internal, watchFacts{},
			outcome{next: stepRelist, end: WatchInternalError, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing}},
		{"store resync failed", atWatchStream, resync, watchFacts{},
			outcome{next: stepRelist, end: WatchResyncFailed, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing}},
		{"403 event", atWatchStream, forbidden, watchFacts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthLoss, reason: ReasonForbidden}},
		{"connection lost", atWatchStream, lost, watchFacts{},
			outcome{next: stepRelist, end: WatchFailed, relist: ListWatchError, health: healthLoss, reason: ReasonWatchFailing}},

		// A WatchList failed to open, or ended before its initial events did.
		{"WatchList open 429", atWatchListOpen, throttled, watchFacts{},
			outcome{next: stepBackoffRewatch, end: WatchThrottled, relist: ListRetry, health: healthNow, reason: ReasonThrottled, streak: streakKeep, retryAfter: 7 * time.Second}},
		{"WatchList open refused", atWatchListOpen, connectionRefused(), watchFacts{},
			outcome{next: stepBackoffRewatch, end: WatchUnreachable, relist: ListRetry, health: healthNow, reason: ReasonUnreachable, streak: streakKeep}},
		{"WatchList open 410", atWatchListOpen, expired, watchFacts{},
			outcome{next: stepRewatch, end: WatchExpired, relist: ListExpired, streak: streakKeep, reached: true, forgetRV: true}},
		{"WatchList open too large", atWatchListOpen, tooLargeRV(), watchFacts{},
			outcome{next: stepRewatch, end: WatchTooLarge, relist: ListTooLarge, streak: streakKeep, reached: true, forgetRV: true}},
		{"WatchList refused (400)", atWatchListOpen, apierrors.NewBadRequest("no"), watchFacts{},
			outcome{next: stepListInstead, end: WatchFailed, relist: ListWatchListFallback, streak: streakKeep}},
		{"WatchList open 403", atWatchListOpen, forbidden, watchFacts{},
			outcome{next: stepListInstead, end: WatchFailed, relist: ListWatchListFallback, streak: streakKeep}},
		{"WatchList closed before its end", atWatchListStream, nil, watchFacts{},
			outcome{next: stepBackoffRewatch, end: WatchClosed, relist: ListRetry, health: healthLoss, reason: ReasonListFailing, streak: streakKeep}},
		{"WatchList closed before its end, bound reached", atWatchListStream, nil, watchFacts{gaveUp: true},
			outcome{next: stepListInstead, end: WatchClosed, relist: ListWatchListFallback, health: healthLoss, reason: ReasonListFailing, streak: streakKeep}},
		{"WatchList very short", atWatchListStream, short, watchFacts{},
			outcome{next: stepListInstead, end: WatchVeryShort, relist: ListWatchListFallback, health: healthLoss, reason: ReasonListFailing, streak: streakKeep}},
		{"WatchList stream 410", atWatchListStream, expired, watchFacts{},
			outcome{next: stepRewatch, end: WatchExpired, relist: ListExpired, streak: streakKeep, reached: true, forgetRV: true}},
		{"WatchList stream 429", atWatchListStream, throttled, watchFacts{},
			outcome{next: stepBackoffRewatch, end: WatchThrottled, relist: ListRetry, health: healthNow, reason: ReasonThrottled, streak: streakKeep, retryAfter: 7 * time.Second}},
		{"WatchList stream 500", atWatchListStream, internal, watchFacts{},
			outcome{next: stepListInstead, end: WatchInternalError, relist: ListWatchListFallback, health: healthLoss, reason: ReasonListFailing, streak: streakKeep}},
		{"WatchList connection lost", atWatchListStream, lost, watchFacts{},
			outcome{next: stepListInstead, end: WatchFailed, relist: ListWatchListFallback, health: healthLoss, reason: ReasonListFailing, streak: streakKeep}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := classifyWatch(tc.where, tc.err, tc.facts); got != tc.want {
				t.Errorf("classifyWatch(%v, %v, %+v)\n got %+v\nwant %+v", tc.where, tc.err, tc.facts, got, tc.want)
			}
		})
	}
}
