package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kreflector/cache/cachetest"
)

// sampleEvery is how often the sampler looks at who handles what;
// refreshEvery how often it reads the server's objects anew (a copy of
// every object, taken under the server's lock: not at every sample).
const (
	sampleEvery  = 50 * time.Millisecond
	refreshEvery = 500 * time.Millisecond
)

// sampler records, every sampleEvery, which replica handles each object
// the server holds (Ring.Handles: its gate is open for the object's
// bucket). A killed replica counts as handling nothing from its kill on,
// as a dead process would; for double handling, though, its real gate
// counts until it has fenced itself, since that is the safety at stake.
type sampler struct {
	cms   *cachetest.Resource
	fleet *fleet

	mu sync.Mutex
	// objs are the server's objects as last read, at read.
	objs []runtime.Object
	read time.Time
	// lastOwned is when each object was last seen with a live handler,
	// or first seen at all.
	lastOwned map[types.UID]time.Time
	step      stepStats
	// counting is false before the first step has formed: until then no
	// object has had a handler yet, and gaps mean nothing.
	counting bool
}

// stepStats is what the sampler saw during one step.
type stepStats struct {
	// longest is the longest time an object went without a live handler,
	// and which object.
	longest    time.Duration
	longestObj string
	// twice counts (sample, object) pairs with two replicas handling it.
	twice int
	// samples counts samples; owners is how many objects each live
	// replica handled in the last one, and orphans how many had none.
	samples int
	owners  map[string]int
	orphans int
	objects int
}

func newSampler(cms *cachetest.Resource, f *fleet) *sampler {
	return &sampler{cms: cms, fleet: f, lastOwned: map[types.UID]time.Time{}}
}

// run samples until ctx ends.
func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sample()
		}
	}
}

func (s *sampler) sample() {
	reps := s.fleet.replicas()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.read) >= refreshEvery {
		s.objs, _ = s.cms.Objects()
		s.read = now
	}
	objs := s.objs
	for _, rp := range reps {
		if !rp.gone.Load() {
			fenced := rp.ring.Status().Fenced
			if fenced && !rp.wasFenced {
				rp.fences.Add(1)
			}
			rp.wasFenced = fenced
		}
		if k := rp.killed.Load(); k != nil && rp.fencedAfter.Load() == 0 {
			if _, handling := rp.ring.Handling(); !handling {
				rp.fencedAfter.Store(int64(max(now.Sub(*k), time.Nanosecond)))
			}
		}
	}
	owners := map[string]int{}
	orphans := 0
	seen := make(map[types.UID]time.Time, len(objs))
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		live, real := 0, 0
		for _, rp := range reps {
			if !rp.ring.Handles(o) {
				continue
			}
			real++
			if rp.killed.Load() == nil {
				live++
				owners[rp.name]++
			}
		}
		if real > 1 {
			s.step.twice++
		}
		last, ok := s.lastOwned[m.GetUID()]
		if live > 0 || !ok || !s.counting {
			last = now
		} else {
			orphans++
			if gap := now.Sub(last); gap > s.step.longest {
				s.step.longest, s.step.longestObj = gap, m.GetNamespace()+"/"+m.GetName()
			}
		}
		seen[m.GetUID()] = last
	}
	s.lastOwned = seen
	s.step.samples++
	s.step.owners, s.step.orphans, s.step.objects = owners, orphans, len(objs)
}

// begin starts a new step's statistics; from the first call on, objects
// without a handler count.
func (s *sampler) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step = stepStats{}
	s.counting = true
}

// end returns the step's statistics, taking one sample first so that they
// are current.
func (s *sampler) end() stepStats {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step
}

// now returns the last sample's figures.
func (s *sampler) last() stepStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step
}
