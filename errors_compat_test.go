package cache

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/kreflector/cache/cachetest"
)

// errorPath is one way a ListAndWatch cycle can end, and what both
// Reflectors must return for it.
type errorPath struct {
	name    string
	lists   []listReply
	watches []watchReply
	// watchList leaves WatchList on (the script otherwise refuses it).
	watchList bool
	// replaceErr makes the store's Replace fail with it.
	replaceErr error
	// injected is the error the script or store injects; nil if none.
	injected error
	// want is how the returned error relates to injected.
	want errorMapping
}

// errorMapping is how a returned error relates to the injected one.
type errorMapping int

const (
	// returnsNil: the cycle ends without an error (client-go logs it).
	returnsNil errorMapping = iota
	// unwrapped: the very error the ListerWatcher returned (==).
	unwrapped
	// wrappedSameText: a wrapping error whose text equals client-go's.
	wrappedSameText
)

// errorPaths is the mapping of every error path of client-go v0.37.2's
// ListAndWatchWithContext; TestErrorsAreClientGos checks each against
// client-go's Reflector on the same script.
func errorPaths() []errorPath {
	base := listReply{list: cmList("10", "", cm("a", "5"))}
	expired := apierrors.NewResourceExpired("rv already expired")
	forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("no"))
	internal := apierrors.NewInternalError(errors.New("etcd"))
	replaceErr := errors.New("store full")
	synced := []watch.Event{ev(watch.Added, cm("a", "5")), bookmark("10", true)}
	return []errorPath{
		{name: "watch open 410 after a LIST", lists: []listReply{base}, watches: []watchReply{{err: expired}}, injected: expired, want: unwrapped},
		{name: "watch open 403 after a LIST", lists: []listReply{base}, watches: []watchReply{{err: forbidden}}, injected: forbidden, want: unwrapped},
		{name: "watch open io.EOF after a LIST", lists: []listReply{base}, watches: []watchReply{{err: io.EOF}}, injected: io.EOF, want: unwrapped},
		{name: "watch open 410 after a WatchList sync and a closed watch", watchList: true,
			watches:  []watchReply{{events: synced, closeAfter: 2 * time.Second}, {err: expired}},
			injected: expired, want: unwrapped},
		{name: "LIST 500", lists: []listReply{{err: internal}}, injected: internal, want: wrappedSameText},
		{name: "LIST 403", lists: []listReply{{err: forbidden}}, injected: forbidden, want: wrappedSameText},
		{name: "LIST returns an object that is not a list", lists: []listReply{{list: cm("a", "1")}}, injected: errNotList, want: wrappedSameText},
		{name: "Replace fails after a LIST", lists: []listReply{base}, replaceErr: replaceErr, injected: replaceErr, want: wrappedSameText},
		{name: "Replace fails after a WatchList falls back to LIST", watchList: true, lists: []listReply{base},
			watches: []watchReply{{events: synced, closeAfter: time.Hour}}, replaceErr: replaceErr, injected: replaceErr, want: wrappedSameText},
		{name: "watch ends with a 410 ERROR event", lists: []listReply{base}, watches: []watchReply{{events: []watch.Event{errEvent(expiredStatus())}}}, want: returnsNil},
		{name: "watch ends with a 500 ERROR event", lists: []listReply{base}, watches: []watchReply{{events: []watch.Event{errEvent(internalStatus())}}}, want: returnsNil},
		{name: "very short watch", lists: []listReply{base}, watches: []watchReply{{}}, want: returnsNil},
	}
}

// errNotList is what meta.ListAccessor says of an object that is not a list.
var errNotList = func() error { _, err := meta.ListAccessor(cm("a", "1")); return err }()

// listAndWatchOnce runs one ListAndWatchWithContext of either Reflector on
// p's script in a synctest bubble and returns its error. A cycle that is
// still watching when the script runs dry is stopped (and returns nil).
func listAndWatchOnce(t *testing.T, p errorPath, clientGo bool) (err error) {
	synctest.Test(t, func(t *testing.T) {
		lw := newScript(slices.Clone(p.lists), slices.Clone(p.watches))
		lw.noWL = !p.watchList
		store := cachetest.NewRecordingStore(nil)
		if p.replaceErr != nil {
			store.FailOn(cachetest.OpReplace, p.replaceErr)
		}
		done := make(chan error, 1)
		_, stop := startRun(t, func(ctx context.Context) {
			if clientGo {
				done <- clientgocache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, clientgocache.ReflectorOptions{}).ListAndWatchWithContext(ctx)
				return
			}
			done <- NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, ReflectorOptions{}).ListAndWatchWithContext(ctx)
		})
		select {
		case err = <-done:
		case <-lw.drained:
			stop()
			err = <-done
		}
		stop()
		lw.inflight.Wait()
	})
	return err
}

// TestErrorsAreClientGos: for every error path, ListAndWatch returns what
// client-go's returns: nil where client-go only logs, the ListerWatcher's
// own error (==) where client-go returns it as is, and the same text where
// client-go wraps.
func TestErrorsAreClientGos(t *testing.T) {
	for _, p := range errorPaths() {
		t.Run(p.name, func(t *testing.T) {
			theirs := listAndWatchOnce(t, p, true)
			ours := listAndWatchOnce(t, p, false)
			switch p.want {
			case returnsNil:
				if theirs != nil || ours != nil {
					t.Fatalf("want nil from both; client-go %v, ours %v", theirs, ours)
				}
			case unwrapped:
				if theirs != p.injected || ours != p.injected {
					t.Fatalf("want the ListerWatcher's error itself (%v); client-go %#v, ours %#v", p.injected, theirs, ours)
				}
			case wrappedSameText:
				if theirs == nil || ours == nil || theirs.Error() != ours.Error() {
					t.Fatalf("want the same text; client-go %v, ours %v", theirs, ours)
				}
				if !strings.Contains(ours.Error(), p.injected.Error()) || !errors.Is(ours, p.injected) {
					t.Fatalf("ours %v must wrap %v", ours, p.injected)
				}
			}
		})
	}
}

// The WatchErrorHandler gets the error ListAndWatch returned: on the watch
// path the ListerWatcher's own, so client-go-style checks (err == io.EOF,
// err.(apierrors.APIStatus)) work in it.
func TestWatchErrorHandlerGetsTheListerWatchersError(t *testing.T) {
	forbidden := apierrors.NewForbidden(cmGVR, "", errors.New("no"))
	synctest.Test(t, func(t *testing.T) {
		lw := newScript([]listReply{{list: cmList("10", "", cm("a", "5"))}}, []watchReply{{err: forbidden}})
		lw.noWL = true
		ctx, cancel := context.WithCancel(t.Context())
		var got []error
		handler := func(_ context.Context, _ *Reflector, err error) {
			got = append(got, err)
			cancel()
		}
		NewReflectorWithOptions(lw, &corev1.ConfigMap{}, cachetest.NewRecordingStore(nil), ReflectorOptions{WatchErrorHandler: handler}).RunWithContext(ctx)
		if len(got) != 1 || got[0] != error(forbidden) {
			t.Fatalf("handler got %v, want exactly the ListerWatcher's %v", got, forbidden)
		}
		if _, isStatus := got[0].(apierrors.APIStatus); !isStatus {
			t.Fatalf("handler's error %T is not an APIStatus", got[0])
		}
	})
}
