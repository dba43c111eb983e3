package cache

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// ErrStoreRefused is wrapped by the error of a watch event the store
// refused: its Add, Update or Delete failed (for an informer, its
// transform failed on the object, or its queue refused it). The change is
// not lost: the watch ends, Health turns Degraded (ReasonStoreFailing) at
// once, the refusal is counted (Stats.StoreRefusals, the
// reflector_store_refusals_total metric), and the Reflector relists after
// a backoff delay, so that the store matches the server again once it
// accepts (the relist's Replace goes through the same store). client-go
// logs such an event and drops it.
var ErrStoreRefused = errors.New("the store refused a watch event")

// refused wraps err, the store's refusal of ev's object obj.
func refused(ev watch.Event, obj klog.ObjectRef, err error) error {
	return fmt.Errorf("%w: %s %s: %w", ErrStoreRefused, ev.Type, obj, err)
}

// storeOutcome completes o for a watch that ended because the store
// refused an event, or a cycle an informer's failing indexer ended
// (atIndexer): the cycle ends, the next one relists after a backoff
// delay, and Health says so at once (waiting for the server cannot mend
// a store).
func storeOutcome(o outcome) outcome {
	o.next, o.streak, o.relist = stepRelist, streakKeep, ListStoreRefused
	// dispatch (or relistFor) has logged the failure at error level.
	o.health, o.reason = healthNow, ReasonStoreFailing
	return o
}

// dispatch sends an accepted event to the store (or the initial-events
// buffer). A store that refuses an added, modified or deleted object ends
// the watch with an error wrapping ErrStoreRefused (client-go logs it and
// goes on, the change lost); a failed Bookmark is only logged. Both are
// logged at error level.
func (s *streamer) dispatch(ev watch.Event, obj metav1.Object) error {
	var err error
	switch ev.Type {
	case watch.Added:
		s.batch.count(idxAdded)
		s.lean(ev.Object, (*intake).lean)
		err = s.sink.Add(ev.Object)
	case watch.Modified:
		s.batch.count(idxModified)
		s.mode = s.mode.pastAdded()
		s.lean(ev.Object, (*intake).lean)
		err = s.sink.Update(ev.Object)
	case watch.Deleted:
		s.batch.count(idxDeleted)
		s.mode = s.mode.pastAdded()
		s.lean(ev.Object, (*intake).leanDeleted)
		err = s.sink.Delete(ev.Object)
	case watch.Bookmark:
		s.batch.count(idxBookmark)
		s.mode = s.mode.pastAdded()
		err = s.bookmark(obj)
	default:
		s.batch.count(idxDropped)
		err = fmt.Errorf("unknown watch event type %q", ev.Type)
	}
	if err == nil {
		return nil
	}
	s.c.logger.Error(err, "Unable to apply watch event to store", "reflector", s.subject.name, "event", ev.Type, "object", klog.KObj(obj))
	if ev.Type == watch.Bookmark {
		return nil
	}
	s.c.r.stats.storeRefused()
	return refused(ev, klog.KObj(obj), err)
}
