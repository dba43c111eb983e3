package cache

import (
	"context"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"
)

// A reshard is merged into the store when it can be: the objects outside
// the new shard are dropped with no API call, only the ranges the new
// shard adds are listed, and the watch resumes, with the new selector,
// from where the old one stopped. Events of the added ranges at or below
// the LIST's resourceVersion are older than what the LIST gave and are
// dropped (kube-apiserver's resourceVersions are integers that order a
// type's changes, KEP-5504). Anything that makes the merge unsound falls
// back to listing the whole shard, counted by reason.

// localReplacer is a store that applies a merged reshard itself, in order
// with the changes queued ahead of it: an informer's queue, whose store
// lags the Reflector by what is queued. Of what its store holds when the
// merge is applied it keeps what keeps says, and it adds listed (the
// added ranges); its handlers get no call for what it kept. Deciding
// what to keep any earlier would put back objects as they were before
// the queued watch events changed or deleted them.
type localReplacer interface {
	ReplaceLocal(listed []interface{}, resourceVersion string, keeps func(held interface{}) bool) error
	// mergesLocally says whether ReplaceLocal can be applied so.
	mergesLocally() bool
}

// catchUp drops the watch events of the ranges a merged reshard listed
// that the LIST already covered: those at or below its resourceVersion.
type catchUp struct {
	added Shard
	upTo  uint64
}

// drops says whether an event for obj (of resourceVersion rv) is one the
// merge's LIST already covered.
func (cu *catchUp) drops(obj runtime.Object, rv string) bool {
	if cu == nil {
		return false
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil || n > cu.upTo {
		return false
	}
	in, err := cu.added.Contains(obj)
	return err == nil && in
}

// caughtUp says whether ev (of object obj) is one the merge's LIST
// covered, to be dropped; the first event past the LIST ends the catch-up
// (a watch's events come in resourceVersion order).
func (c *cycle) caughtUp(ev watch.Event, obj metav1.Object) bool {
	rv := obj.GetResourceVersion()
	if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n > c.catchUp.upTo {
		c.catchUp = nil
		return false
	}
	return ev.Type != watch.Bookmark && c.catchUp.drops(ev.Object, rv)
}

// mergeBlocker says why the cycle's shard cannot be merged into the store
// ("" if it can).
func (c *cycle) mergeBlocker() ReshardFallback {
	r := c.r
	switch {
	case r.reshardByRelist:
		return FallbackAsked
	case r.storeShard.IsZero() || c.shard == nil:
		return FallbackNotSynced
	case r.storeShard.Key() != c.shard.shard.Key():
		return FallbackKeyChanged
	case r.pos.unavailable:
		return FallbackUnavailable
	case r.heldList == nil:
		return FallbackStoreUnlistable
	}
	if lr, ok := r.store.(localReplacer); ok && !lr.mergesLocally() {
		return FallbackPerObjectQueue
	}
	if _, err := strconv.ParseUint(r.pos.last, 10, 64); err != nil {
		return FallbackIncomparable
	}
	return ""
}

// reshard runs phaseReshard: it merges the new shard into the store (see
// above) and moves on to phaseWatch, or falls back to phaseList.
func (c *cycle) reshard(ctx context.Context) phase {
	r := c.r
	r.pendingReshard = false
	if why := c.mergeBlocker(); why != "" {
		r.stats.reshardFellBack(why)
		return c.firstSync()
	}
	start := r.clock.Now()
	added, err := c.shard.shard.Minus(r.storeShard)
	if err != nil {
		r.stats.reshardFellBack(FallbackKeyChanged)
		return c.firstSync()
	}
	listed, rv, ok := c.listAdded(ctx, added)
	if !ok {
		return c.firstSync()
	}
	kept, err := c.mergeInto(listed, rv)
	if err != nil {
		r.stats.reshardFellBack(FallbackListFailed)
		return c.firstSync()
	}
	if !added.IsZero() {
		n, _ := strconv.ParseUint(rv, 10, 64)
		c.catchUp = &catchUp{added: added, upTo: n}
	}
	c.merged(len(listed), kept, start)
	return phaseWatch
}

// firstSync is the phase a cycle syncs with: WatchList if the server
// takes it, else LIST.
func (c *cycle) firstSync() phase {
	if c.r.server.wantsWatchList(c.r.clock.Now()) {
		return phaseWatchList
	}
	return phaseList
}

// listAdded lists the objects of the added ranges, at the resume position
// or later; ok is false (counted) if that failed. With nothing added it
// lists nothing and returns the resume position.
func (c *cycle) listAdded(ctx context.Context, added Shard) (items []interface{}, rv string, ok bool) {
	r := c.r
	if added.IsZero() {
		return nil, r.pos.last, true
	}
	// Filtering locally, a server that ignores the selector sends every
	// object: the added ranges' are kept, as a relist would.
	spec := newShardSpec(added, c.shard.local)
	res, err, ok := c.listShard(ctx, r.pos.last, r.pageSizeFor(r.pos.last), ListReshardAdded, spec, false)
	if !ok {
		return nil, "", false
	}
	if err != nil {
		c.logger.V(2).Info("Listing the ranges a reshard added failed; listing the whole shard", "reflector", r.name, "err", err)
		r.stats.reshardFellBack(FallbackListFailed)
		return nil, "", false
	}
	return res.items, res.resourceVersion, true
}

// keeps returns what says whether the new shard keeps a held item. A
// compact store's record is placed by the hash of its UID, kept in it,
// where the shard is by UID; otherwise (by namespace, or a record with no
// UID) it is decoded to be placed. It may run on another goroutine (an
// informer's, applying the merge).
func (c *cycle) keeps() func(held interface{}) bool {
	s := c.shard.shard
	return func(it interface{}) bool {
		if r, ok := it.(*compactRecord); ok && s.Key() != ShardByNamespace && r.uid != 0 {
			return s.ContainsHash(r.uid)
		}
		obj, ok := heldObject(it)
		if !ok {
			return false
		}
		in, err := s.Contains(obj)
		return err == nil && in
	}
}

// mergeInto hands the store the new shard. An informer's queue gets the
// listed objects and what decides which held ones stay, applied in order
// with the changes queued before it (kept is then -1: decided there); any
// other store, which only this Reflector writes, gets the held objects
// the new shard keeps and the listed ones.
func (c *cycle) mergeInto(listed []interface{}, rv string) (kept int, err error) {
	keeps := c.keeps()
	if lr, ok := c.r.store.(localReplacer); ok {
		return -1, lr.ReplaceLocal(listed, rv, keeps)
	}
	var held []interface{}
	for _, it := range c.r.heldList() {
		if keeps(it) {
			held = append(held, it)
		}
	}
	return len(held), c.r.store.Replace(append(held, listed...), rv)
}

// heldObject is the object a held item stands for: the item, or a
// compact store's record decoded (through its read cache, so the decoded
// copy is not kept: the record is what is kept).
func heldObject(it interface{}) (runtime.Object, bool) {
	if r, ok := it.(*compactRecord); ok {
		obj, err := r.object()
		if err != nil {
			return nil, false
		}
		it = obj
	}
	obj, ok := it.(runtime.Object)
	return obj, ok
}

// merged records a merged reshard: the store holds the new shard, the
// watch resumes from the old position (r.pos is left as it was). kept is
// how many held objects stayed, -1 where an informer's queue decides.
func (c *cycle) merged(listed, kept int, start time.Time) {
	r := c.r
	now := r.clock.Now()
	if kept < 0 {
		c.logger.V(2).Info("Reshard merged; the informer's queue keeps what stays", "reflector", r.name, "listed", listed)
	} else {
		c.logger.V(2).Info("Reshard merged", "reflector", r.name, "listed", listed, "kept", kept)
	}
	r.stats.resharded()
	r.stats.synced(listed, now.Sub(start), now) // what the server sent
	r.storeShard = c.shard.shard
	r.listCause = ListWatchError
	c.resync = startResync(r.clock, r.resyncPeriod)
	r.shards.syncedWith(c.shard)
	r.live.synced(realClock.Now())
}

// listerOf returns store's List if store lists what it holds: not a
// queue, whose List is what waits to be popped.
func listerOf(store ReflectorStore) func() []interface{} {
	if _, queue := store.(interface {
		Pop(clientgocache.PopProcessFunc) (interface{}, error)
	}); queue {
		return nil
	}
	if l, ok := store.(interface{ List() []interface{} }); ok {
		return l.List
	}
	return nil
}
