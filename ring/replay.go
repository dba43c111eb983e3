package ring

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// replayTimeout is the timeout a replay asks its watch to end by. More
// than 2 s, since kube-apiserver's watch cache sends a bookmark 2 s before
// a watch's deadline (and none when that is already past at the start):
// the bookmark, a second or so after the start, says that every change up
// to it has been sent.
const replayTimeout = 3 * time.Second

// replayReq asks for the deletes of the objects of buckets made since
// from, a position their last holder published: the changes of the type
// of key that no handler of this ring may have been handed (the holder
// died, was cut off or paused, or its informers stopped before it let the
// buckets go).
type replayReq struct {
	key     string
	from    uint64
	buckets set
}

// errReplayCut is returned for a replay watch that ended before its
// timeout without a bookmark: what it sent may not be all.
var errReplayCut = errors.New("the watch ended early")

// replay watches lw from req.from for the objects of req.buckets and
// returns the objects deleted, in order, up to the first bookmark or the
// end of the watch at its timeout (with no bookmark, no newer change of
// the type was there to send). It reads no further than the bookmark
// even when events come sooner: this replica's cache may hold the
// buckets from a later position than its informer's resume position (a
// merged reshard lists the added ranges at the latest), and the bookmark
// is the one end that is sure to be past it. An ERROR event, the server's refusal
// (410: history compacted) or a watch cut short is an error: the deletes
// cannot be known.
func (r *Ring) replay(ctx context.Context, lw clientgocache.ListerWatcher, req replayReq) ([]interface{}, error) {
	sh, ok := shardOf(req.buckets, r.cfg.Key)
	if !ok {
		return nil, nil
	}
	opts := metav1.ListOptions{
		ResourceVersion:     strconv.FormatUint(req.from, 10),
		AllowWatchBookmarks: true,
		TimeoutSeconds:      ptr.To(int64(replayTimeout / time.Second)),
		ShardSelector:       sh.String(),
	}
	start := r.cfg.Clock.Now()
	w, err := clientgocache.ToListerWatcherWithContext(lw).WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	if w == nil {
		return nil, errors.New("the ListerWatcher returned no watch and no error")
	}
	defer w.Stop()
	var deleted []interface{}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case ev, open := <-w.ResultChan():
			switch {
			case !open && r.cfg.Clock.Since(start) < replayTimeout-time.Second:
				return nil, errReplayCut
			case !open, ev.Type == watch.Bookmark:
				return deleted, nil
			case ev.Type == watch.Error:
				return nil, apierrors.FromObject(ev.Object)
			case ev.Type == watch.Deleted:
				if b, ok := r.bucket(ev.Object); ok && req.buckets.has(b) {
					deleted = append(deleted, ev.Object)
				}
			}
		}
	}
}

// replayAll runs the replays of o that concern informer i and returns
// the deletes found, oldest first by request. A replay that fails is
// reported (Status.Unreplayed, LastError) and its buckets open without
// it.
func (r *Ring) replayAll(ctx context.Context, i *Informer, o *opening) []interface{} {
	var out []interface{}
	for _, req := range o.replays {
		if req.key != i.key {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, replayTimeout+r.cfg.RetryPeriod)
		deleted, err := r.replay(ctx, i.lw, req)
		cancel()
		if err != nil {
			r.stat.unreplayed(req.buckets.len(), fmt.Errorf("replaying the deletes of %d buckets of %s since resourceVersion %d, after their holder stopped handling them: %w (deletes made meanwhile may not reach a handler)", req.buckets.len(), req.key, req.from, err))
			continue
		}
		out = append(out, deleted...)
	}
	return out
}
