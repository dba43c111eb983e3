package ring

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kreflector/cache"
)

// registry holds the ring's informers and the cache set they follow. The
// loop writes the set; informers read it when they start.
type registry struct {
	ring *Ring

	mu    sync.Mutex
	infs  []*Informer
	cache cacheShard
	// planned is closed once the first non-empty cache set is known.
	planned chan struct{}
}

func (g *registry) add(i *Informer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.infs = append(g.infs, i)
}

func (g *registry) plannedCh() chan struct{} {
	if g.planned == nil {
		g.planned = make(chan struct{})
	}
	return g.planned
}

// start waits until there is a cache set, gives it to i as its shard
// and marks i running, or returns false when ctx ends first. Done under
// the registry's lock, so no later cache set can miss i.
func (g *registry) start(ctx context.Context, i *Informer) bool {
	g.mu.Lock()
	ch := g.plannedCh()
	g.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.cache.set.clone()
	sh, _ := shardOf(s, g.ring.cfg.Key)
	o := g.ring.cfg.ReflectorOptions
	o.Shard, o.ShardFilterLocally = &sh, true
	o.ReshardByRelist = o.ReshardByRelist || g.ring.cfg.ReshardByRelist
	if err := i.SharedIndexInformer.(cache.ReflectorConfigurable).SetReflectorOptions(o); err != nil {
		panic(fmt.Sprintf("ring: an informer of the ring was started outside it: %v", err))
	}
	i.mu.Lock()
	i.running, i.shard, i.done = true, cacheShard{set: s, ok: true}, ctx.Done()
	i.mu.Unlock()
	return true
}

// setCache gives every running informer the shard of s, if it changed.
// The empty set keeps the previous shard (no Shard expresses "nothing";
// the gate holds nothing open then anyway).
func (g *registry) setCache(s set) {
	if s.len() == 0 {
		return
	}
	g.mu.Lock()
	if g.cache.ok && g.cache.set.equal(s) {
		g.mu.Unlock()
		return
	}
	first := !g.cache.ok
	g.cache = cacheShard{set: s.clone(), ok: true}
	if first {
		close(g.plannedCh())
	}
	infs := append([]*Informer(nil), g.infs...)
	g.mu.Unlock()
	sh, _ := shardOf(s, g.ring.cfg.Key)
	for _, i := range infs {
		i.reshard(s, sh, g.ring)
	}
}

// reshard moves a running informer to shard sh (of set s).
func (i *Informer) reshard(s set, sh cache.Shard, r *Ring) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.running || i.shard.set.equal(s) {
		return
	}
	if err := i.SharedIndexInformer.(cache.Resharder).SetShard(sh); err != nil {
		r.stat.failed(err)
		return
	}
	i.shard = cacheShard{set: s.clone(), ok: true}
}

// cached says whether every informer of the ring holds the buckets of s,
// waiting at most d: one made but not started yet does not (it will be,
// as every informer is; a replica whose informers do not start does not
// become ready), one that has stopped no longer counts.
func (g *registry) cached(ctx context.Context, s set, d time.Duration) bool {
	sh, ok := shardOf(s, g.ring.cfg.Key)
	if !ok {
		return true
	}
	if g.unstarted() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for _, i := range g.running() {
		if err := i.SharedIndexInformer.(cache.Resharder).WaitForShard(ctx, sh); err != nil {
			return false
		}
	}
	return true
}

// unstarted says whether an informer of the ring has been made but not
// started.
func (g *registry) unstarted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, i := range g.infs {
		i.mu.Lock()
		waiting := !i.running && !i.ended
		i.mu.Unlock()
		if waiting {
			return true
		}
	}
	return false
}

func (g *registry) running() []*Informer {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*Informer
	for _, i := range g.infs {
		i.mu.Lock()
		if i.running {
			out = append(out, i)
		}
		i.mu.Unlock()
	}
	return out
}

// acquired hands the opening o to every handler of every informer that
// has not ended, in order with its notifications, with the cached objects
// of o's buckets at that point (see opening). An informer that has not
// started gets it before its first list.
func (g *registry) acquired(ctx context.Context, o *opening) {
	for _, i := range g.live() {
		replayed := g.ring.replayAll(ctx, i, o)
		if len(replayed) > 0 {
			g.ring.stat.replayed(len(replayed))
		}
		i.queueOpening(o, replayed, g.ring)
	}
}

// handled returns, by type, how far the handlers of the ring's informers
// have been handed their changes (see Informer.handled). Informers that
// have stopped count with their last marks: a replica whose informers
// stop before it hands its buckets over publishes where they stopped.
func (g *registry) handled() positions {
	g.mu.Lock()
	infs := slices.Clone(g.infs)
	g.mu.Unlock()
	p := positions{}
	for _, i := range infs {
		if rv, ok := i.handled(); ok {
			p.lower(i.key, rv)
		}
	}
	return p
}

// stopped says whether an informer of the ring that has handlers has
// been told to stop (its handlers may have missed changes since).
func (g *registry) stopped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, i := range g.infs {
		if i.stopping() {
			return true
		}
	}
	return false
}

// stopping says whether i has handlers and Run's context has ended.
func (i *Informer) stopping() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if len(i.handlers) == 0 || i.done == nil {
		return i.ended && len(i.handlers) > 0
	}
	select {
	case <-i.done:
		return true
	default:
		return false
	}
}

// mark queues a position mark to every handler of every running informer.
func (g *registry) mark() {
	for _, i := range g.running() {
		i.queueMark()
	}
}

// live returns the informers that have not ended.
func (g *registry) live() []*Informer {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*Informer
	for _, i := range g.infs {
		i.mu.Lock()
		if !i.ended {
			out = append(out, i)
		}
		i.mu.Unlock()
	}
	return out
}

// prune drops the deletes kept for buckets no longer awaited.
func (g *registry) prune() {
	for _, i := range g.running() {
		for _, h := range i.gated() {
			h.prune()
		}
	}
}

// gated returns the informer's gated handlers.
func (i *Informer) gated() []*gatedHandler {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Collect(maps.Values(i.handlers))
}

// hashString is FNV-1a of s, as the server hashes a namespace.
func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// filtering counts the running informers whose server ignored their shard
// selector, so that they drop what falls outside it themselves.
func (g *registry) filtering() int {
	n := 0
	for _, i := range g.running() {
		if st := i.Stats().Reflector; st.ShardIgnored || st.ShardDropped > 0 {
			n++
		}
	}
	return n
}
