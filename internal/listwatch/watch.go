package listwatch

import (
	"context"
	"runtime"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"

	"github.com/kreflector/cache/internal/listhint"
	"github.com/kreflector/cache/internal/watchdecode"
)

// streamWatch returns the Watch of a REST whose WATCH request request
// builds (opts.Watch is set): its body is decoded on GOMAXPROCS workers,
// delivered in order (see watchdecode) with the decoders d negotiated from
// the client's serializer; the workers run the item function of the
// Reflector's hint, if any, on every object, and ask its HeldFunc, if
// offered, about the initial ADDED events (see listhint). It opens the watch as rest.Request.Watch does:
// a connection that fails before any response (reset, EOF, a lost HTTP/2
// connection) is tried again a second later, up to client-go's default
// MaxRetries, and then answered with an empty watch.
func streamWatch(request func(opts metav1.ListOptions) *restclient.Request, d *watchdecode.Decoders) func(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.Watch = true
		body, exhausted, err := streamRetrying(ctx, func() *restclient.Request { return request(opts) })
		switch {
		case exhausted:
			return watch.NewEmptyWatch(), nil
		case err != nil:
			return nil, err
		}
		h := listhint.From(ctx)
		item := h.WatchItem()
		return watchdecode.New(body, d, watchdecode.Options{Workers: runtime.GOMAXPROCS(0), Item: item,
			LeaveOutManagedFields: h.LeaveOutManagedFields(), Held: standIns(h.HeldFunc())}), nil
	}
}

// standIns is watchdecode's Held for f, the Reflector's lookup: what f
// answers for stands in a *listhint.Standin (nil f: nil).
func standIns(f listhint.HeldFunc) func(namespace, name, rv string) (apiruntime.Object, bool) {
	if f == nil {
		return nil
	}
	return func(namespace, name, rv string) (apiruntime.Object, bool) {
		obj, ok := f(namespace, name, rv)
		if !ok {
			return nil, false
		}
		return &listhint.Standin{Held: obj, ResourceVersion: strings.Clone(rv)}, true
	}
}

// mustDecoders negotiates the watch decoders of a client's serializer s;
// s is one of client-go's, so failing is a programmer's error.
func mustDecoders(s apiruntime.NegotiatedSerializer) *watchdecode.Decoders {
	d, err := watchdecode.NewDecoders(s)
	if err != nil {
		panic(err)
	}
	return d
}
