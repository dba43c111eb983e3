package cache

import (
	"context"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// burst is how many already-queued events are applied after one select
// before the stream looks at its context and timers again, and publishes
// its resume position and stats. A burst into client-go's stores takes
// well under a millisecond, so stopping and timers are not held up.
const burst = 256

// streamer applies the events of one watch. In WatchList mode (initial
// non-nil) it gathers the initial events instead of writing to the store,
// and returns at the initial-events-end bookmark leaving the watch open.
type streamer struct {
	c       *cycle
	w       watch.Interface
	start   time.Time
	events  int
	initial *initialEvents
	// endReached: the initial-events-end bookmark has been seen.
	endReached bool
	// pastSynthetic: an event other than ADDED has arrived, so the watch is
	// past any synthetic ADDED events and RVs may propagate.
	pastSynthetic bool
	// sink receives ADDED, MODIFIED and DELETED events: the store, or in
	// WatchList mode the initial-events buffer.
	sink      eventSink
	rvUpdater ResourceVersionUpdater
	bookmarks ReflectorBookmarkStore
	stall     stallDetector
	// batch counts the events of the current burst for the stats.
	batch eventBatch
}

func newStreamer(c *cycle, w watch.Interface, watchList bool) *streamer {
	s := &streamer{c: c, w: w, start: c.wStart}
	s.stall = stallDetector{clock: c.r.clock, window: c.r.stallWindow}
	if c.r.server.sendsBookmarks && c.wTimeout > 0 {
		// The server sends bookmarks, so it is a real one that also ends
		// watches at the timeout they asked for.
		s.stall.expectEnd(c.wStart.Add(time.Duration(c.wTimeout) * time.Second))
	}
	if watchList {
		s.initial = newInitialEvents(c.r.store)
		s.sink = s.initial
		return s
	}
	s.sink = c.r.store
	s.rvUpdater, _ = c.r.store.(ResourceVersionUpdater)
	s.bookmarks, _ = c.r.store.(ReflectorBookmarkStore)
	return s
}

// run applies events until the watch closes (nil, or VeryShortWatchError
// if it closed within a second with no event), fails (the error), ctx ends
// (errStopRequested), a resync fails (its error), or, in WatchList mode,
// the initial-events-end bookmark arrives (true, nil).
func (s *streamer) run(ctx context.Context) (bool, error) {
	defer s.endBurst()
	defer s.stall.stop()
	ch := s.w.ResultChan()
	for {
		select {
		case <-ctx.Done():
			return s.endReached, errStopRequested
		case <-s.stall.C():
			if err := s.stall.stalled(); err != nil {
				return s.endReached, err
			}
		case <-s.c.r.live.C():
			s.c.r.graceEnded()
		case <-s.resyncC():
			if err := s.c.resync.fire(s.c.r.store, s.c.r.ShouldResync); err != nil {
				return s.endReached, err
			}
		case ev, open := <-ch:
			done, err := s.drain(ev, open, ch)
			s.sawBurst()
			if done || err != nil {
				return s.endReached, err
			}
			s.endBurst()
			s.c.flowing()
		}
	}
}

// sawBurst tells the stall detector about the burst just applied and
// remembers that the server sends bookmarks if the burst carried one (the
// initial-events-end bookmark included).
func (s *streamer) sawBurst() {
	bookmark := s.batch.hasBookmark()
	s.stall.activity(bookmark)
	if bookmark {
		s.c.r.server.sawBookmark()
	}
}

// endBurst publishes what a burst of events changed: the resume position
// and the stats.
func (s *streamer) endBurst() {
	r := s.c.r
	r.pos.publish()
	if s.batch != (eventBatch{}) {
		r.stats.flush(&s.batch, r.pos.last, r.clock.Now())
	}
}

// drain applies ev and then up to burst events that are already queued.
func (s *streamer) drain(ev watch.Event, open bool, ch <-chan watch.Event) (bool, error) {
	for i := 0; ; i++ {
		if !open {
			return true, s.closed()
		}
		if err := s.apply(ev); err != nil || s.endReached {
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

func (s *streamer) resyncC() <-chan time.Time {
	if s.initial != nil {
		return nil
	}
	return s.c.resync.C()
}

// closed classifies a watch the server closed.
func (s *streamer) closed() error {
	if s.events == 0 && s.c.r.clock.Since(s.start) < time.Second {
		return &VeryShortWatchError{Name: s.c.r.name}
	}
	s.c.logger.V(4).Info("Watch close", "reflector", s.c.r.name, "type", s.c.r.typeDescription, "totalItems", s.events)
	return nil
}

// apply handles one event. Events that cannot be stored are reported and
// skipped; an ERROR event ends the watch with the server's status.
func (s *streamer) apply(ev watch.Event) error {
	if ev.Type == watch.Error {
		s.batch.count(idxError)
		if isNilObject(ev.Object) {
			return fmt.Errorf("watch of %v: %w: ERROR event without a status", s.c.r.typeDescription, ErrUnexpectedObject)
		}
		return fmt.Errorf("watch of %v: %w", s.c.r.typeDescription, apierrors.FromObject(ev.Object))
	}
	obj, ok := s.accept(ev)
	if !ok {
		s.batch.count(idxDropped)
		return nil
	}
	s.dispatch(ev, obj)
	s.track(obj)
	s.events++
	return nil
}

// track records obj's resourceVersion once the watch is past any
// synthetic ADDED events: in WatchList mode as the RV the initial state
// will be Replaced at, otherwise as the resume position (and for a
// ResourceVersionUpdater store). Before that the RV is not read at all, so
// the initial ADDED events of a WatchList are gathered without touching
// their objects.
func (s *streamer) track(obj metav1.Object) {
	switch {
	case s.initial != nil:
		if s.pastSynthetic {
			s.initial.resourceVersion = obj.GetResourceVersion()
		}
	case s.pastSynthetic || !s.c.fromSynthetic:
		rv := obj.GetResourceVersion()
		s.c.r.pos.advance(rv)
		if s.rvUpdater != nil {
			s.rvUpdater.UpdateResourceVersion(rv)
		}
	}
}

// accept checks that ev carries an object the store may hold.
func (s *streamer) accept(ev watch.Event) (metav1.Object, bool) {
	r := s.c.r
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
// It runs for every event, so it reads the interface's data word instead
// of going through reflect: an interface holding a pointer stores that
// pointer there, and any other value is stored behind a non-nil pointer.
// TestIsNilObject pins this against reflect's answer.
func isNilObject(o runtime.Object) bool {
	return o == nil || (*[2]unsafe.Pointer)(unsafe.Pointer(&o))[1] == nil
}

// report logs an event the stream skipped or could not apply. It does not
// go through utilruntime.HandleError, whose global rate limiter would make
// the stream sleep on every error.
func (s *streamer) report(err error, ev watch.Event) {
	s.c.logger.Error(err, "Skipping watch event", "reflector", s.c.r.name, "type", s.c.r.typeDescription, "event", ev.Type)
}

// dispatch sends an accepted event to the store (or the initial-events
// buffer). A store error is only logged (the Reflector's logger, at error
// level) and the stream goes on, as in client-go.
func (s *streamer) dispatch(ev watch.Event, obj metav1.Object) {
	var err error
	switch ev.Type {
	case watch.Added:
		s.batch.count(idxAdded)
		err = s.sink.Add(ev.Object)
	case watch.Modified:
		s.batch.count(idxModified)
		s.pastSynthetic = true
		err = s.sink.Update(ev.Object)
	case watch.Deleted:
		s.batch.count(idxDeleted)
		s.pastSynthetic = true
		err = s.sink.Delete(ev.Object)
	case watch.Bookmark:
		s.batch.count(idxBookmark)
		s.pastSynthetic = true
		err = s.bookmark(obj)
	default:
		s.batch.count(idxDropped)
		err = fmt.Errorf("unknown watch event type %q", ev.Type)
	}
	if err != nil {
		s.c.logger.Error(err, "Unable to apply watch event to store", "reflector", s.c.r.name, "event", ev.Type, "object", klog.KObj(obj))
	}
}

func (s *streamer) bookmark(obj metav1.Object) error {
	if s.initial != nil {
		s.endReached = s.endReached || obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
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
