package cachetest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The errors below have the shape kube-apiserver gives them, so that the
// apierrors predicates (IsResourceExpired, IsTimeout, HasStatusCause, ...)
// and utilnet.IsConnectionRefused classify them as they would the real ones.

// errWatchTooOld is what the watch cache answers a watch from a
// resourceVersion older than its window: 410 Expired, naming the oldest
// resourceVersion still served.
func errWatchTooOld(rv, oldest uint64) *apierrors.StatusError {
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, oldest))
}

// errListTooOld is what the storage layer answers a LIST at a compacted
// resourceVersion.
func errListTooOld() *apierrors.StatusError {
	return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
}

// errContinueExpired answers a continue token whose snapshot was compacted.
// Like kube-apiserver it carries, in the status's ListMeta, a token that
// continues from the same key in the newest state (an inconsistent list).
func errContinueExpired(inconsistent string) *apierrors.StatusError {
	err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue value from the response to obtain an inconsistent list.")
	err.ErrStatus.ListMeta.Continue = inconsistent
	return err
}

// errTooLarge is the 504 a read gets when the server does not reach the
// resourceVersion asked for within the freshness wait.
func errTooLarge(rv, current uint64) *apierrors.StatusError {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// errInvalidRV answers a resourceVersion that is not a number.
func errInvalidRV(gr schema.GroupResource, rv string, cause error) *apierrors.StatusError {
	return apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: gr.Resource}, "",
		field.ErrorList{field.Invalid(field.NewPath("resourceVersion"), rv, cause.Error())})
}

// errInvalidListOptions answers list options that fail validation.
func errInvalidListOptions(errs field.ErrorList) *apierrors.StatusError {
	return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
}

// errConflict answers an update or delete whose precondition does not hold.
func errConflict(gr schema.GroupResource, name string) *apierrors.StatusError {
	return apierrors.NewConflict(gr, name,
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

// errConnectionRefused is what a client gets from a server that is down:
// the transport's dial error wrapped in a *url.Error, as client-go's REST
// client returns it.
func errConnectionRefused(c call) error {
	return &url.Error{
		Op:  "Get",
		URL: "https://cachetest.invalid" + c.path(),
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)},
	}
}

// errTimeout is the 504 of kube-apiserver's request timeout filter.
func errTimeout() *apierrors.StatusError {
	return apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0)
}

// errForbidden is an RBAC denial for c.
func errForbidden(c call) *apierrors.StatusError {
	scope := "at the cluster scope"
	if c.namespace != "" {
		scope = fmt.Sprintf("in the namespace %q", c.namespace)
	}
	return apierrors.NewForbidden(c.gr, c.name, fmt.Errorf("User %q cannot %s resource %q in API group %q %s",
		"system:serviceaccount:default:cachetest", c.verb, c.gr.Resource, c.gr.Group, scope))
}

// errThrottled is the 429 of kube-apiserver's max-in-flight filter.
func errThrottled(retryAfterSeconds int) *apierrors.StatusError {
	return apierrors.NewTooManyRequests("Too many requests, please try again later.", retryAfterSeconds)
}

// errInternal is a 500.
func errInternal() *apierrors.StatusError {
	return apierrors.NewInternalError(fmt.Errorf("cachetest: injected internal error"))
}
