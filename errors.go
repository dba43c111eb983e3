package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	clientgocache "k8s.io/client-go/tools/cache"
)

// VeryShortWatchError reports a watch that the server closed within a second
// of opening it without delivering a single event: usually a sign that the
// server is unhealthy, so the Reflector relists rather than re-watching. It
// is client-go's type, so errors.As with either package's name finds it.
type VeryShortWatchError = clientgocache.VeryShortWatchError

// WatchErrorHandler is called with every error that ends a ListAndWatch
// cycle; the Reflector then backs off and starts a new cycle. It must return
// quickly.
//
// It is our own type, not client-go's, because its first parameter is our
// *Reflector: a handler reads the Reflector that failed (its Name, Health,
// Stats), and client-go's handler type takes client-go's *Reflector, which
// no Reflector here is. The error it receives is the one client-go's
// Reflector would hand over (see ListAndWatchWithContext).
type WatchErrorHandler func(r *Reflector, err error)

// WatchErrorHandlerWithContext is WatchErrorHandler with the Run context.
// It is our own type for the same reason as WatchErrorHandler.
type WatchErrorHandlerWithContext func(ctx context.Context, r *Reflector, err error)

// DefaultWatchErrorHandler logs err at a level fitting its kind: expired
// resourceVersions and unexpected EOFs quietly, clean closes not at all, and
// everything else as an error. Unlike client-go's it does not go through
// utilruntime.HandleError, whose global rate limiter sleeps in the caller.
func DefaultWatchErrorHandler(ctx context.Context, r *Reflector, err error) {
	logger := r.loggerFor(ctx)
	switch {
	case isExpiredError(err):
		logger.V(4).Info("Watch closed", "reflector", r.name, "type", r.typeDescription, "err", err)
	case errors.Is(err, io.EOF):
	case errors.Is(err, io.ErrUnexpectedEOF):
		logger.V(1).Info("Watch closed with unexpected EOF", "reflector", r.name, "type", r.typeDescription, "err", err)
	default:
		logger.Error(err, "Failed to watch", "reflector", r.name, "type", r.typeDescription)
	}
}

// ErrUnexpectedObject is wrapped by the errors reported for watch events
// the Reflector skips: nil objects (also typed nil pointers), objects of the
// wrong Go type or GVK, Table objects, and objects without metadata; and by
// the error ending a watch whose ERROR event carries no status.
var ErrUnexpectedObject = errors.New("unexpected object in watch event")

// ErrNilResult is wrapped by the error a ListerWatcher call fails with when
// it returned neither a result nor an error: a List with a nil list (also
// a typed nil pointer, on any page) or a Watch with a nil watch.Interface.
// The Reflector treats it as that call failing with an error (health,
// backoff, retry), where client-go's would crash on it.
var ErrNilResult = errors.New("returned nil and no error")

// errNilList and errNilWatch are the errors of a List and of a Watch that
// returned nil and no error.
var (
	errNilList  = fmt.Errorf("the ListerWatcher's List %w", ErrNilResult)
	errNilWatch = fmt.Errorf("the ListerWatcher's Watch %w", ErrNilResult)
)

// isExpiredError: the resourceVersion asked for has been compacted away
// (410; old servers said Gone instead of Expired).
func isExpiredError(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersionError: the server has not caught up with the
// resourceVersion asked for. Newer servers set a status cause; servers before
// 1.18.6 only said so in a cause message or the status message of a timeout.
func isTooLargeResourceVersionError(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message == "Too large resource version" {
				return true
			}
		}
	}
	return strings.Contains(s.Message, "Too large resource version")
}

// isRVUnavailable: the server cannot serve the resourceVersion asked for.
func isRVUnavailable(err error) bool {
	return isExpiredError(err) || isTooLargeResourceVersionError(err)
}

// rvRejected: the server refused a request at resourceVersion rv as
// malformed (400 or 422). rv came from a watch event (an object with a
// resourceVersion the server cannot parse), so asking at it again would
// fail forever; "" and "0" are always valid and never rejected for it.
func rvRejected(rv string, err error) bool {
	return rv != "" && rv != "0" && (apierrors.IsBadRequest(err) || apierrors.IsInvalid(err))
}

// isWatchOpenRetriable: opening a watch failed in a way that says the server
// is overloaded or unreachable, so the Reflector backs off and watches again
// from where it was instead of relisting everything.
func isWatchOpenRetriable(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}

// errStoreResync wraps an error from the store's Resync, which ends the
// watch it interrupted (and with it the cycle).
var errStoreResync = errors.New("store resync failed")

// errStopRequested marks the end of a cycle because the context ended.
var errStopRequested = errors.New("stop requested")

// errCycleEnded marks the end of a cycle whose failure was carried out
// where it happened (a store Resync that failed, see cycle.resyncNow).
var errCycleEnded = errors.New("cycle ended")
