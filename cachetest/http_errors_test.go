package cachetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kreflector/cache/cachetest"
)

// Injected faults reach client-go as the errors kube-apiserver's would,
// recognised by the apierrors predicates.
func TestHTTPFaultsAsStatusErrors(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a")
	c := cs.CoreV1().ConfigMaps("ns")
	for _, tc := range []struct {
		name  string
		verb  cachetest.Verb
		fault cachetest.Fault
		call  func() error
		is    func(error) bool
	}{
		{"403 on list", cachetest.VerbList, cachetest.Forbidden(), func() error { _, err := c.List(ctx, metav1.ListOptions{}); return err }, apierrors.IsForbidden},
		{"500 on create", cachetest.VerbCreate, cachetest.InternalError(), func() error { _, err := c.Create(ctx, cm("", "b"), metav1.CreateOptions{}); return err }, apierrors.IsInternalError},
		{"504 on get", cachetest.VerbGet, cachetest.Timeout(), func() error { _, err := c.Get(ctx, "a", metav1.GetOptions{}); return err }, apierrors.IsTimeout},
		{"500 for a plain error", cachetest.VerbDelete, cachetest.Error(errors.New("disk on fire")), func() error { return c.Delete(ctx, "a", metav1.DeleteOptions{}) }, func(err error) bool {
			return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "disk on fire")
		}},
		{"409 as injected", cachetest.VerbUpdate, cachetest.Error(apierrors.NewConflict(cms.GroupResource(), "a", errors.New("injected"))), func() error {
			_, err := c.Update(ctx, cm("ns", "a"), metav1.UpdateOptions{})
			return err
		}, apierrors.IsConflict},
	} {
		srv.FailNext(tc.verb, 1, tc.fault)
		if err := tc.call(); !tc.is(err) {
			t.Errorf("%s: got %v", tc.name, err)
		}
		if err := tc.call(); tc.is(err) {
			t.Errorf("%s: the fault was used twice: %v", tc.name, err)
		}
	}
}

// A 429 carries Retry-After both in the status and as a header; client-go
// waits that long and retries by itself, so only a request that does not
// retry sees the error.
func TestHTTPTooManyRequests(t *testing.T) {
	srv, cms, cs := startHTTP(t, cachetest.Options{})
	ctx := bounded(t)
	create(t, cms, "ns/a")

	srv.FailNext(cachetest.VerbGet, 1, cachetest.TooManyRequests(3*time.Second))
	err := cs.CoreV1().RESTClient().Get().Namespace("ns").Resource("configmaps").Name("a").MaxRetries(0).Do(ctx).Error()
	if secs, ok := apierrors.SuggestsClientDelay(err); !apierrors.IsTooManyRequests(err) || !ok || secs != 3 {
		t.Fatalf("got %v (delay %d, %v), want 429 suggesting 3s", err, secs, ok)
	}

	srv.FailNext(cachetest.VerbGet, 1, cachetest.TooManyRequests(3*time.Second))
	resp := rawGet(ctx, t, srv, "/api/v1/namespaces/ns/configmaps/a", "")
	status := decodeStatus(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" ||
		status.Kind != "Status" || status.APIVersion != "v1" || status.Reason != metav1.StatusReasonTooManyRequests {
		t.Fatalf("raw 429: %d, Retry-After %q, %+v", resp.StatusCode, resp.Header.Get("Retry-After"), status)
	}

	// The two GETs above came early, as this test made them at once.
	early := srv.Stats().EarlyRetries
	srv.FailNext(cachetest.VerbList, 1, cachetest.TooManyRequests(time.Second))
	if _, err := cs.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("client-go did not retry after the Retry-After: %v", err)
	}
	if st := srv.Stats(); st.Faults[cachetest.FaultTooManyRequests] != 3 || st.EarlyRetries != early || st.Calls[cachetest.VerbList] != 2 {
		t.Fatalf("429s %d, early retries %d (%d before), lists %d; want 3, none more, 2",
			st.Faults[cachetest.FaultTooManyRequests], st.EarlyRetries, early, st.Calls[cachetest.VerbList])
	}
}

// Requests the server cannot serve get kube-apiserver's statuses: 405 for
// a method the path does not take, 406 when JSON is not acceptable, 415
// for a body that is not JSON, 422 for options that fail validation.
func TestHTTPRequestErrors(t *testing.T) {
	srv, _, cs := startHTTP(t, cachetest.Options{DisableWatchList: true})
	ctx := bounded(t)
	for _, tc := range []struct {
		method, path, contentType, accept string
		code                              int
	}{
		{http.MethodPost, "/api/v1/configmaps", "application/json", "", http.StatusMethodNotAllowed},
		{http.MethodPatch, "/api/v1/namespaces/ns/configmaps/a", "application/merge-patch+json", "", http.StatusMethodNotAllowed},
		{http.MethodGet, "/api/v1/configmaps", "", "application/vnd.kubernetes.protobuf", http.StatusNotAcceptable},
		{http.MethodPost, "/api/v1/namespaces/ns/configmaps", "application/vnd.kubernetes.protobuf", "", http.StatusUnsupportedMediaType},
		{http.MethodPost, "/api/v1/namespaces/ns/configmaps", "application/json", "", http.StatusBadRequest},
		{http.MethodGet, "/api/v1/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "", "", http.StatusUnprocessableEntity},
		{http.MethodGet, "/api/v1/configmaps?limit=x", "", "", http.StatusBadRequest},
	} {
		req, err := http.NewRequestWithContext(ctx, tc.method, srv.URL()+tc.path, strings.NewReader("{not json"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", tc.contentType)
		req.Header.Set("Accept", tc.accept)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if status := decodeStatus(t, resp); resp.StatusCode != tc.code || int(status.Code) != tc.code {
			t.Errorf("%s %s: %d %+v, want %d", tc.method, tc.path, resp.StatusCode, status, tc.code)
		}
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.Major != "1" || !strings.Contains(v.GitVersion, "cachetest") {
		t.Fatalf("version %+v, %v", v, err)
	}
	if body := readAll(t, rawGet(ctx, t, srv, "/readyz", "text/plain")); body != "ok" {
		t.Fatalf("/readyz: %q", body)
	}
}

// rawGet GETs path with the server's client, with an Accept header if set.
func rawGet(ctx context.Context, t *testing.T, srv *cachetest.Server, path, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// decodeStatus reads a response body as a metav1.Status.
func decodeStatus(t *testing.T, resp *http.Response) metav1.Status {
	t.Helper()
	var s metav1.Status
	if body := readAll(t, resp); json.Unmarshal([]byte(body), &s) != nil {
		t.Fatalf("body is not a Status: %q", body)
	}
	return s
}
