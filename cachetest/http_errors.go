package cachetest

import (
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// statusOf turns an error of the core into the status kube-apiserver would
// answer: API status errors as they are, anything else as 500
// InternalError carrying its message.
func statusOf(err error) metav1.Status {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		if s.Code == 0 {
			s.Code = http.StatusInternalServerError
		}
		if s.Status == "" {
			s.Status = metav1.StatusFailure
		}
		return s
	}
	return apierrors.NewInternalError(err).ErrStatus
}

// writeError answers a failed request: a refused connection (an injected
// ConnectionRefused fault, or a closed core) is simulated at the
// connection level (see refuse); any other error is written as a
// metav1.Status with its code, and a status carrying RetryAfterSeconds
// (429, and 5xx that suggest a delay) gets a Retry-After header, as
// kube-apiserver sends them.
func (h *httpServer) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if utilnet.IsConnectionRefused(err) {
		h.refuse(w, r)
		return
	}
	writeStatus(w, statusOf(err))
}

// writeStatus writes s as the response, with s.Code as the HTTP status.
func writeStatus(w http.ResponseWriter, s metav1.Status) {
	if s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	writeJSON(w, int(s.Code), &s, statusKind)
}
