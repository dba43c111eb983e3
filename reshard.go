package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrNotSharded is returned by SetShard on a Reflector (or informer)
// created without ReflectorOptions.Shard.
var ErrNotSharded = errors.New("not created with a shard (ReflectorOptions.Shard)")

// Resharder is implemented by a sharded Reflector and by this package's
// informers: SetShard changes the shard while it runs, and WaitForShard
// waits until the store holds a shard's objects.
type Resharder interface {
	SetShard(s Shard) error
	// WaitForShard blocks until a sync made with shard s has been
	// completed (nil), ctx ends (its error), or the Reflector (informer)
	// has stopped (at once if it had: an error wrapping ErrStopped).
	WaitForShard(ctx context.Context, s Shard) error
}

var _ Resharder = &Reflector{}

// SetShard changes the shard of a Reflector created with
// ReflectorOptions.Shard. Safe from any goroutine, before or while it
// runs. A running Reflector ends its cycle at once (the watch, a LIST in
// flight, or a backoff wait) and syncs the new shard by merging it into
// the store: the objects outside it are dropped with no API call, only the
// ranges it adds are listed (a LIST counted as ListReshardAdded, at the
// resume position, so kube-apiserver answers it from its watch cache), the
// store is Replaced with what it kept and what was listed, and the watch
// resumes, with the new selector, from where it was; events of the added
// ranges at or below the LIST's resourceVersion, which the LIST already
// covered, are dropped. An informer's handlers see objects that left
// deleted and objects that entered added, and nothing for the objects it
// keeps. Where a merge is not sound (no sync yet, a server that ignores
// shard selectors, a resume position that is not an integer or is no
// longer served, a store that cannot list what it holds, a failed LIST)
// it lists the whole new shard instead (ListReshard) and counts why
// (Stats.ReshardFallbacks, the reflector_reshards_total metric). Until the
// Replace the store keeps what the old shard held, so a replica never owns
// less than the smaller of its old and new shard. To hand ranges over
// between replicas with an owner for every object at every instant, give
// each replica the union of its old and new shard (Shard.Union), wait
// until every replica has synced, then give each its new shard.
//
// It fails, changing nothing, for the zero Shard (ErrInvalidShard) or a
// Reflector created unsharded (ErrNotSharded). Setting the shard it has is a
// no-op.
func (r *Reflector) SetShard(s Shard) error {
	switch {
	case s.IsZero():
		return fmt.Errorf("%w: SetShard with the zero Shard", ErrInvalidShard)
	case r.shards == nil:
		return fmt.Errorf("SetShard on reflector %s: %w", r.name, ErrNotSharded)
	}
	r.shards.set(s)
	return nil
}

// WaitForShard blocks until the store has been synced with shard s: a
// LIST or WatchList made with s as its selector has been Replaced into the
// store (nil), ctx ends (its error, wrapping ErrNotSynced), or Run has
// returned (at once if it had: the error wraps ErrNotSynced and
// ErrStopped, since nothing will sync the shard any more). After
// SetShard(s) it tells when the store holds the new shard's objects; it
// is the step to wait for between the two steps of a handoff (see
// SetShard). Safe from any goroutine.
func (r *Reflector) WaitForShard(ctx context.Context, s Shard) error {
	if r.shards == nil {
		return fmt.Errorf("WaitForShard on reflector %s: %w", r.name, ErrNotSharded)
	}
	for {
		synced, _, changed := r.shards.lastSynced()
		if synced.Equal(s) {
			return nil
		}
		h, healthChanged := r.health.next()
		if h.State == Stopped {
			return shardNotSynced(s, ErrStopped)
		}
		select {
		case <-changed:
		case <-healthChanged:
		case <-ctx.Done():
			return shardNotSynced(s, ctx.Err())
		}
	}
}

// shardNotSynced is the error of a WaitForShard for s that returns
// unsynced, why: ctx's error, or ErrStopped.
func shardNotSynced(s Shard, why error) error {
	return fmt.Errorf("%w with shard %s: %w", ErrNotSynced, s, why)
}

// Shard returns the Reflector's shard; the zero Shard if it is unsharded.
func (r *Reflector) Shard() Shard {
	if spec := r.shards.current(); spec != nil {
		return spec.shard
	}
	return Shard{}
}

// shardControl holds a sharded Reflector's shard, which SetShard may
// change from any goroutine, and ends the Run iteration in progress when it
// does. Its mutex guards every field.
type shardControl struct {
	mu   sync.Mutex
	spec *shardSpec
	// cancel ends the Run iteration in progress; nil between iterations.
	cancel context.CancelFunc
	// changed: the shard changed during the iteration in progress.
	changed bool
	// synced is the shard of the last completed sync; syncedC is closed
	// and replaced when it changes.
	synced Shard
	// syncs counts the syncs completed; each was one store Replace.
	syncs   uint64
	syncedC chan struct{}
}

func newShardControl(s *Shard, local bool) *shardControl {
	if s == nil {
		return nil
	}
	if s.IsZero() {
		panic("cache: ReflectorOptions.Shard is the zero Shard; make one with ReplicaShard, NewShard or ParseShard")
	}
	return &shardControl{spec: newShardSpec(*s, local), syncedC: make(chan struct{})}
}

// syncedWith is told that a sync made with spec completed.
func (sc *shardControl) syncedWith(spec *shardSpec) {
	if sc == nil || spec == nil {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.synced = spec.shard
	sc.syncs++
	close(sc.syncedC)
	sc.syncedC = make(chan struct{})
}

// lastSynced returns the shard of the last completed sync, how many syncs
// have completed, and a channel closed at the next.
func (sc *shardControl) lastSynced() (Shard, uint64, <-chan struct{}) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.synced, sc.syncs, sc.syncedC
}

// current is the shard to use now; nil when unsharded (sc nil).
func (sc *shardControl) current() *shardSpec {
	if sc == nil {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.spec
}

func (sc *shardControl) set(s Shard) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.spec.shard.Equal(s) {
		return
	}
	sc.spec = newShardSpec(s, sc.spec.local)
	sc.changed = true
	if sc.cancel != nil {
		sc.cancel()
	}
}

// begin starts a Run iteration (a cycle and the wait after it): the
// returned context ends with ctx or when the shard changes. A nil
// shardControl (unsharded) returns ctx itself.
func (sc *shardControl) begin(ctx context.Context) context.Context {
	if sc == nil {
		return ctx
	}
	ictx, cancel := context.WithCancel(ctx)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.cancel, sc.changed = cancel, false
	return ictx
}

// end ends the iteration begin started and says whether the shard changed
// during it.
func (sc *shardControl) end() bool {
	if sc == nil {
		return false
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.cancel()
	changed := sc.changed
	sc.cancel, sc.changed = nil, false
	return changed
}
