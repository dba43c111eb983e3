// Package informerset is what the factories (informers, dynamicinformer,
// metadatainformer) share: the informers requested so far, by key; which
// of them a Start has started; Shutdown's wait for their goroutines; and,
// for the factories keyed by GVR, the factory's methods and the building
// of one GVR's informer.
package informerset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// ErrNotStarted is wrapped by WaitForSync's error for an informer
// requested after the factory's last Start.
var ErrNotStarted = errors.New("requested but not started (call the factory's Start after requesting it)")

// Set holds informers of type I by key K. Its zero value is ready to use;
// it must not be copied after first use. All methods are safe for
// concurrent use.
type Set[K comparable, I any] struct {
	mu           sync.Mutex // guards what follows
	items        map[K]I
	started      map[K]bool
	shuttingDown bool
	wg           sync.WaitGroup // the Run goroutines Start began
}

// GetOrAdd returns the informer of key, built by build (under the set's
// lock) if key has none yet: the first request for a key wins.
func (s *Set[K, I]) GetOrAdd(key K, build func() I) I {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inf, ok := s.items[key]; ok {
		return inf
	}
	if s.items == nil {
		s.items, s.started = map[K]I{}, map[K]bool{}
	}
	inf := build()
	s.items[key] = inf
	return inf
}

// Start runs run, each in a goroutine of its own, for every informer not
// started yet; it starts nothing once Shutdown was called. run must return
// once whatever stop signal it closes over fires.
func (s *Set[K, I]) Start(run func(I)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown {
		return
	}
	for key, inf := range s.items {
		if !s.started[key] {
			s.wg.Go(func() { run(inf) })
			s.started[key] = true
		}
	}
}

// Shutdown stops Start from starting informers and waits until every run
// Start began has returned. It may be called more than once, concurrently.
func (s *Set[K, I]) Shutdown() {
	s.mu.Lock()
	s.shuttingDown = true
	s.mu.Unlock()
	s.wg.Wait()
}

// Snapshot returns the started informers and the keys of those requested
// but not started.
func (s *Set[K, I]) Snapshot() (started map[K]I, pending []K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	started = make(map[K]I, len(s.items))
	for key, inf := range s.items {
		if s.started[key] {
			started[key] = inf
		} else {
			pending = append(pending, key)
		}
	}
	return started, pending
}

// WaitForSync waits for every started informer with wait, and returns nil
// if all synced, else one error naming each key not synced: wrapping
// notSynced and ErrNotStarted for one never started, and wait's error for
// one started. The errors are sorted by text, so the result is stable.
func (s *Set[K, I]) WaitForSync(ctx context.Context, notSynced error, wait func(context.Context, I) error) error {
	started, pending := s.Snapshot()
	var errs []error
	for _, key := range pending {
		errs = append(errs, fmt.Errorf("%v: %w: %w", key, notSynced, ErrNotStarted))
	}
	for key, inf := range started {
		if err := wait(ctx, inf); err != nil {
			errs = append(errs, fmt.Errorf("%v: %w", key, err))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}
