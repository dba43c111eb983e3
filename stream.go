package cache

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kreflector/cache/internal/listhint"
	"github.com/kreflector/cache/internal/repr"
)

// burst is how many already-queued events are applied after one select
// before the stream looks at its context and timers again, and publishes
// its resume position and stats. A burst into client-go's stores takes
// well under a millisecond, so stopping and timers are not held up.
const burst = 256

// streamMode is where a stream is in the life of its watch. It decides
// where accepted events go and whether their resourceVersions are tracked.
type streamMode uint8

const (
	// modeLive: events go to the store and move the resume position.
	modeLive streamMode = iota
	// modeSynthetic: a watch from RV "" or "0" is still in the synthetic
	// ADDED events that open it, in no particular order: events go to the
	// store, but their RVs are not tracked until a non-ADDED event shows
	// that phase is over (then modeLive).
	modeSynthetic
	// modeGathering: a WatchList's initial ADDED events are gathered, not
	// stored, and their RVs not read (then modeGatheringTracked).
	modeGathering
	// modeGatheringTracked: a WatchList past its first non-ADDED event:
	// events are gathered and the last RV is kept for the Replace.
	modeGatheringTracked
	// modeInitialEnded: the initial-events-end bookmark arrived; the
	// stream returns, leaving the watch open.
	modeInitialEnded
)

// pastAdded is the mode after an event other than ADDED.
func (m streamMode) pastAdded() streamMode {
	switch m {
	case modeSynthetic:
		return modeLive
	case modeGathering:
		return modeGatheringTracked
	}
	return m
}

// gathering: events go to the initial-events buffer, not the store.
func (m streamMode) gathering() bool { return m >= modeGathering }

// streamer applies the events of one watch. In WatchList mode it gathers
// the initial events instead of writing to the store, and returns at the
// initial-events-end bookmark leaving the watch open. While it runs it
// owns what the stream changes: the watch's last sign of life, the resume
// position (advanced per event, published per burst) and the stats of its
// events; it tells liveness when data flows and the server facts when a
// bookmark comes, and waits as every wait of the cycle does (see await).
type streamer struct {
	c      *cycle
	watch  *watching
	events int
	// initial gathers a WatchList's initial events; nil otherwise.
	initial *initialEvents
	// sink receives ADDED, MODIFIED and DELETED events: the store, or in
	// WatchList mode the initial-events buffer.
	sink eventSink
	// rvUpdater and bookmarks are the store's optional interfaces (nil
	// when it lacks them, and while gathering).
	rvUpdater ResourceVersionUpdater
	bookmarks ReflectorBookmarkStore
	pos       *resumePosition
	subject   *subject
	// shard checks a sharded Reflector's events; nil when unsharded.
	shard *shardCheck
	stall stallDetector
	quiet quietCheck
	// batch counts the events of the current burst for the stats.
	batch eventBatch
	// mode follows batch, in its padding.
	mode streamMode
}

// streamerFor hands the cycle's watch wg to a new streamer.
func (c *cycle) streamerFor(wg *watching) *streamer {
	r := c.r
	s := &streamer{
		c: c, watch: wg, mode: wg.mode, pos: &r.pos, subject: &r.subject,
		stall: stallDetector{clock: realClock, window: r.stallWindow},
		shard: c.shard.newCheck(),
	}
	if r.server.sendsBookmarks && wg.timeout > 0 {
		// The server sends bookmarks, so it is a real one that also ends
		// watches at the timeout they asked for. requested is on the
		// Reflector's clock, the detector on the real one.
		left := wg.requested.Add(time.Duration(wg.timeout) * time.Second).Sub(r.clock.Now())
		s.stall.expectEnd(realClock.Now().Add(left))
	}
	if wg.mode.gathering() {
		s.initial = newInitialEvents(r.store, r.in, wg.leaned)
		s.sink = s.initial
		return s
	}
	s.quiet = c.newQuietCheck(wg)
	s.sink = r.store
	s.rvUpdater, _ = r.store.(ResourceVersionUpdater)
	s.bookmarks, _ = r.store.(ReflectorBookmarkStore)
	return s
}

// run applies events until the watch closes (nil, or VeryShortWatchError
// if it closed within a second with no event), fails (the error), ctx ends
// (errStopRequested), a resync fails (errCycleEnded), or, in WatchList
// mode, the initial-events-end bookmark arrives (true, nil).
func (s *streamer) run(ctx context.Context) (bool, error) {
	defer s.endBurst()
	defer s.stall.stop()
	defer s.quiet.stop()
	ch := s.watch.w.ResultChan()
	for {
		ev, open, why := await(ctx, &s.c.r.live, s.c, ch, s.stall.C(), s.quiet.C(), s.quiet.answered())
		switch why {
		case wakeStop:
			return s.ended(), errStopRequested
		case wakeEnded:
			return s.ended(), errCycleEnded
		case 0:
			if err := s.stall.stalled(); err != nil {
				return s.ended(), err
			}
		case 1:
			s.quiet.due(ctx, realClock.Now())
		case 2:
			s.quietAnswer(ctx)
		case wakeValue:
			done, err := s.drain(ev, open, ch)
			s.sawBurst()
			if done || err != nil {
				return s.ended(), err
			}
			s.endBurst()
			if !s.mode.gathering() {
				// A WatchList's initial events show nothing yet: only the
				// sync they end does (see liveness.synced).
				s.flowing()
			}
		}
	}
}

// flowing is told that a burst of events was applied: a sign of life of
// the watch, and of the server.
func (s *streamer) flowing() {
	now := realClock.Now()
	s.watch.lastSign = now
	s.c.r.live.flowing(now)
}

// ended says whether the initial-events-end bookmark has arrived.
func (s *streamer) ended() bool { return s.mode == modeInitialEnded }

// sawBurst tells the stall detector about the burst just applied, and the
// owner if the burst carried a bookmark (the initial-events-end one
// included).
func (s *streamer) sawBurst() {
	bookmark := s.batch.hasBookmark()
	s.stall.activity(bookmark)
	if bookmark {
		s.c.r.server.sawBookmark()
	}
}

// endBurst publishes what a burst of events changed: the resume position,
// the stats and, while gathering, the WatchList's progress.
func (s *streamer) endBurst() {
	r := s.c.r
	s.pos.publish()
	if s.initial != nil {
		r.watchListing.gathered(len(s.initial.items))
	}
	if s.batch != (eventBatch{}) {
		r.stats.flush(&s.batch, s.pos.last, r.clock.Now())
	}
}

// drain applies ev and then up to burst events that are already queued.
func (s *streamer) drain(ev watch.Event, open bool, ch <-chan watch.Event) (bool, error) {
	for i := 0; ; i++ {
		if !open {
			return true, s.closed()
		}
		if err := s.apply(ev); err != nil || s.ended() {
			return true, err
		}
		if i == burst {
			return false, nil
		}
		select {
		case ev, open = <-ch:
		default:
			return false, nil
		}
	}
}

// closed classifies a watch the server closed.
func (s *streamer) closed() error {
	if s.events == 0 && s.c.r.clock.Since(s.watch.requested) < time.Second {
		// client-go's very-short-watch rule: closed within a second of
		// the request, with nothing in it.
		return &VeryShortWatchError{Name: s.subject.name}
	}
	s.c.logger.V(4).Info("Watch close", "reflector", s.subject.name, "type", s.subject.typeDescription, "totalItems", s.events)
	return nil
}

// apply handles one event. Events that cannot be stored are reported and
// skipped; an ERROR event ends the watch with the server's status.
func (s *streamer) apply(ev watch.Event) error {
	if ev.Type == watch.Error {
		s.batch.count(idxError)
		if isNilObject(ev.Object) {
			return fmt.Errorf("watch of %v: %w: ERROR event without a status", s.subject.typeDescription, ErrUnexpectedObject)
		}
		return fmt.Errorf("watch of %v: %w", s.subject.typeDescription, apierrors.FromObject(ev.Object))
	}
	if st, ok := ev.Object.(*listhint.Standin); ok {
		return s.applyStandin(ev, st)
	}
	obj, ok := s.accept(ev)
	if !ok {
		s.batch.count(idxDropped)
		return nil
	}
	if s.shard != nil && ev.Type != watch.Bookmark {
		if keep, err := s.shard.event(obj, ev.Object); !keep {
			if err == nil {
				s.batch.shardDropped++
			}
			return err
		}
	}
	if s.c.catchUp != nil && s.c.caughtUp(ev, obj) {
		// Received, and counted as such, but older than the merge's LIST.
		s.batch.count(slices.Index(EventTypes, ev.Type))
		return nil
	}
	// Read before the store has the object: from then on a handler may
	// change it, and a read after would race with the handler.
	var rv string
	if tracked(s.mode, ev.Type) {
		rv = obj.GetResourceVersion()
	}
	if err := s.dispatch(ev, obj); err != nil {
		return err
	}
	s.track(rv)
	s.events++
	return nil
}

// applyStandin gathers the held object a WatchList's initial ADDED event
// stands for (our ListWatch did not decode it: see watchHeld). Only
// while gathering, where the store is not written until the Replace that
// ends it; anywhere else a stand-in would be a broken promise of the
// ListWatch, and ends the watch with an error.
func (s *streamer) applyStandin(ev watch.Event, st *listhint.Standin) error {
	if ev.Type != watch.Added || s.initial == nil || !s.mode.gathering() {
		s.batch.count(idxDropped)
		return fmt.Errorf("watch of %v: %w: a held object's stand-in (event %s) outside a WatchList's initial events", s.subject.typeDescription, ErrUnexpectedObject, ev.Type)
	}
	s.batch.count(idxAdded)
	if s.shard != nil {
		s.shard.standIn()
	}
	if err := s.initial.addHeld(st.Held); err != nil {
		s.c.r.stats.storeRefused()
		return refused(ev, klog.KRef("", ""), err)
	}
	if tracked(s.mode, ev.Type) {
		s.track(st.ResourceVersion)
	}
	s.events++
	return nil
}

// tracked says whether an event of type t that arrives in mode m has its
// resourceVersion tracked: whether the mode dispatch leaves is one that
// track records in.
func tracked(m streamMode, t watch.EventType) bool {
	if t == watch.Modified || t == watch.Deleted || t == watch.Bookmark {
		m = m.pastAdded()
	}
	return m == modeLive || m == modeGatheringTracked
}

// track records the resourceVersion rv of the event just dispatched once
// the watch is past any synthetic ADDED events: while gathering as the RV
// the initial state will be Replaced at, otherwise as the resume position
// (and for a ResourceVersionUpdater store). Before that the RV is not read
// at all (see tracked), so the initial ADDED events of a WatchList are
// gathered without touching their objects.
func (s *streamer) track(rv string) {
	switch s.mode {
	case modeGatheringTracked, modeInitialEnded:
		s.initial.resourceVersion = rv
	case modeLive:
		s.pos.advance(rv)
		if s.rvUpdater != nil {
			s.rvUpdater.UpdateResourceVersion(rv)
		}
	}
}

// accept checks that ev carries an object the store may hold.
func (s *streamer) accept(ev watch.Event) (metav1.Object, bool) {
	r := s.subject
	if isNilObject(ev.Object) {
		s.report(fmt.Errorf("%w: nil %T", ErrUnexpectedObject, ev.Object), ev)
		return nil, false
	}
	if r.expectedType != nil && reflect.TypeOf(ev.Object) != r.expectedType {
		s.report(fmt.Errorf("%w: got %T, want %v", ErrUnexpectedObject, ev.Object, r.expectedType), ev)
		return nil, false
	}
	if r.expectedGVK != nil && ev.Object.GetObjectKind().GroupVersionKind() != *r.expectedGVK {
		s.report(fmt.Errorf("%w: got %v, want %v", ErrUnexpectedObject, ev.Object.GetObjectKind().GroupVersionKind(), *r.expectedGVK), ev)
		return nil, false
	}
	if unsupportedTableObject(ev.Object) {
		s.report(fmt.Errorf("%w: Table objects cannot be stored", ErrUnexpectedObject), ev)
		return nil, false
	}
	if obj, ok := ev.Object.(metav1.Object); ok {
		// What meta.Accessor would return, without the call.
		return obj, true
	}
	obj, err := meta.Accessor(ev.Object)
	if err != nil {
		s.report(fmt.Errorf("%w: %w", ErrUnexpectedObject, err), ev)
		return nil, false
	}
	return obj, true
}

// isNilObject: nil, or a nil pointer of an object type. No decoder makes
// one, but a hand-written watch can, and its methods would panic.
//
// It runs for every event, so it reads the interface's data word (see
// repr.IsNil) instead of going through reflect. TestIsNilObject pins
// this against reflect's answer.
func isNilObject(o runtime.Object) bool { return repr.IsNil(o) }

// report logs an event the stream skipped or could not apply. It does not
// go through utilruntime.HandleError, whose global rate limiter would make
// the stream sleep on every error.
func (s *streamer) report(err error, ev watch.Event) {
	s.c.logger.Error(err, "Skipping watch event", "reflector", s.subject.name, "type", s.subject.typeDescription, "event", ev.Type)
}

// lean applies the Reflector's lean options to obj, an event's object,
// by how (the intake's method for the event's type), before the store
// gets it, unless the watch's objects arrived lean (watching.leaned);
// while gathering, the initial-events buffer prepares what it gathers
// itself.
func (s *streamer) lean(obj runtime.Object, how func(*intake, runtime.Object)) {
	if in := s.subject.in; in != nil && in.leans() && !s.mode.gathering() && !s.watch.leaned {
		how(in, obj)
	}
}

func (s *streamer) bookmark(obj metav1.Object) error {
	if s.mode.gathering() {
		if obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			s.mode = modeInitialEnded
		}
		return nil
	}
	if s.bookmarks == nil {
		return nil
	}
	return s.bookmarks.Bookmark(obj.GetResourceVersion())
}

// eventSink is where accepted ADDED, MODIFIED and DELETED events go.
type eventSink interface {
	Add(obj interface{}) error
	Update(obj interface{}) error
	Delete(obj interface{}) error
}

// unsupportedTableObject is unsupportedTableList for one watched object.
func unsupportedTableObject(o runtime.Object) bool {
	u, ok := o.(*unstructured.Unstructured)
	return ok && u.GetKind() == "Table" && tableGVKs[u.GroupVersionKind().String()]
}
