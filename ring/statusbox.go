package ring

import (
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// statusBox is the one owner of a Ring's Status: the loop and the fencer
// report to it, readers copy it.
type statusBox struct {
	mu      sync.Mutex
	s       Status
	changed chan struct{}
}

func (b *statusBox) init(lease, identity string) {
	b.s = Status{Lease: lease, Identity: identity}
	b.changed = make(chan struct{})
}

// update applies f and wakes the watchers.
func (b *statusBox) update(f func(*Status)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.s)
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *statusBox) get() Status {
	s, _ := b.watch()
	return s
}

// watch returns the status and a channel closed at its next change.
func (b *statusBox) watch() (Status, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.s
	s.Waiting = cloneMap(s.Waiting)
	return s, b.changed
}

func (b *statusBox) failed(err error) {
	b.update(func(s *Status) { s.LastError, s.LastErrorAt, s.failing = err, time.Now(), true })
}

// readRing records a round that wrote the Lease (if due) and read the
// ring: the last error is no longer current.
func (b *statusBox) readRing() {
	b.mu.Lock()
	failing := b.s.failing
	b.mu.Unlock()
	if failing { // only the loop sets it
		b.update(func(s *Status) { s.failing = false })
	}
}

func (b *statusBox) fenced() {
	b.update(func(s *Status) { s.Fenced, s.Handling = true, 0 })
}

// lost records a loss of the Lease (see forfeit): handling nothing, rejoining.
func (b *statusBox) lost(why string) {
	b.update(func(s *Status) { s.Rejoins, s.Rejoining, s.Handling = s.Rejoins+1, why, 0 })
}

func (b *statusBox) conflicted(n int) { b.update(func(s *Status) { s.Conflicts += n }) }
func (b *statusBox) released(n int)   { b.update(func(s *Status) { s.Released += n }) }
func (b *statusBox) acquired(n int)   { b.update(func(s *Status) { s.Acquired += n }) }
func (b *statusBox) replayed(n int)   { b.update(func(s *Status) { s.Replayed += n }) }

// unreplayed records buckets taken over whose deletes could not be
// replayed, and why; the loss is logged at error level.
func (b *statusBox) unreplayed(n int, err error) {
	klog.ErrorS(err, "Ring handoff lost track of deletes", "buckets", n)
	b.update(func(s *Status) { s.Unreplayed, s.LastError, s.LastErrorAt = s.Unreplayed+n, err, time.Now() })
}
func (b *statusBox) left() { b.update(func(s *Status) { s.Left, s.Handling, s.Planned = true, 0, 0 }) }

// observed records a round's outcome: the view, this replica's planned
// buckets, what it holds and what its gate has open. A rejoin is over
// once the replica is settled.
func (b *statusBox) observed(v view, me string, mine, open set, filtering int) {
	waiting := map[string]int{}
	for _, m := range v.live {
		if m.name == me {
			continue
		}
		if n := mine.intersect(m.held).len(); n > 0 {
			waiting[m.name] = n
		}
	}
	for _, g := range v.ghosts {
		if n := mine.minus(open).intersect(g.held).len(); n > 0 {
			waiting[g.name+" (vanished)"] += n
		}
	}
	members := 0
	for _, m := range v.live {
		if m.counts() {
			members++
		}
	}
	b.update(func(s *Status) {
		s.Members, s.Buckets, s.Planned, s.Handling = members, v.buckets, mine.len(), open.len()
		s.Waiting, s.Fenced, s.FilteringLocally = waiting, false, filtering
		if s.settled() {
			s.Rejoining = ""
		}
	})
}

func cloneMap(m map[string]int) map[string]int {
	if m == nil {
		return nil
	}
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
