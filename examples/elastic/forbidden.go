package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/ring"
)

// showForbidden runs one replica whose Lease calls are refused with 403,
// as kube-apiserver refuses them without the Role docs/sharding.md gives,
// for a few RetryPeriods, and prints what a user prints of it: its ring
// informer's Health and its WaitForSync error. It fails if either leaves
// the cause out. The replica's errors are logged at info level, marked as
// expected.
func showForbidden(ctx context.Context, base *rest.Config, o ringOptions, out io.Writer) error {
	cfg := rest.CopyConfig(base)
	cfg.Transport = refuseLeases{inner: cfg.Transport}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	r, err := ring.New(ring.Config{Client: cs.CoordinationV1(), Namespace: "kube-system", Name: "elastic-demo-norole", Identity: "x",
		LeaseDuration: o.leaseDuration, RenewDeadline: o.renewDeadline, RetryPeriod: o.retryPeriod, Buckets: o.buckets})
	if err != nil {
		return err
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll, fields.Everything())
	inf := r.NewInformer(lw, &corev1.ConfigMap{}, 0, clientgocache.Indexers{})
	expected := &atomic.Bool{}
	expected.Store(true)
	rctx, cancel := context.WithCancel(replicaLogger(ctx, "x", expected, "this replica demonstrates a missing Role"))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _ = r.Run(rctx) })
	wg.Go(func() { inf.RunWithContext(rctx) })
	wctx, wcancel := context.WithTimeout(ctx, 4*o.retryPeriod)
	defer wcancel()
	hr := inf.(cache.InformerHealthReporter)
	waitErr := hr.WaitForSync(wctx)
	h := hr.Health()
	fmt.Fprintf(out, "   fmt.Println(inf.Health()): %v\n   inf.WaitForSync: %v\n", h, waitErr)
	if !apierrors.IsForbidden(h.Gate) || !strings.Contains(h.String(), "forbidden") || !apierrors.IsForbidden(waitErr) {
		return errors.New("the replica whose Leases are forbidden does not say so in its Health and WaitForSync")
	}
	return nil
}

// refuseLeases is a transport that answers every request for Leases 403
// Forbidden, with the Status body kube-apiserver sends, and passes the
// others on to inner.
type refuseLeases struct{ inner http.RoundTripper }

func (t refuseLeases) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.Contains(req.URL.Path, "/leases") {
		return t.inner.RoundTrip(req)
	}
	st := apierrors.NewForbidden(coordinationv1.Resource("leases"), "",
		errors.New(`User "system:serviceaccount:kube-system:elastic-demo" cannot use resource "leases" in API group "coordination.k8s.io"`)).ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	body, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode: http.StatusForbidden, Status: "403 Forbidden", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(strings.NewReader(string(body))), ContentLength: int64(len(body)), Request: req,
	}, nil
}
