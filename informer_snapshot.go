package cache

// A SnapshotHandler is a ResourceEventHandler that can also be handed the
// informer's stored objects as they stood at one point of its stream of
// notifications (see SnapshotQueuer). Code that changes what it handles
// while the informer runs (the ring's handoffs) uses it to start handling
// from a state that no later notification can contradict: every
// notification it gets after OnSnapshot is newer than the snapshot.
type SnapshotHandler interface {
	ResourceEventHandler
	// OnSnapshot is called on the handler's own goroutine, one call at a
	// time with its other calls: after the notifications of every change
	// the store had applied when the snapshot was taken, before those of
	// any change applied after.
	OnSnapshot(s Snapshot)
}

// Snapshot is the informer's store at one point of its stream.
type Snapshot struct {
	// Tag is the value given to QueueSnapshot.
	Tag any
	// ResourceVersion is the position of the store at that point: the
	// resourceVersion of the last watch event, list or bookmark applied
	// ("" before the first). Every change at or below it had been applied
	// to the store, none above it.
	ResourceVersion string
	// Objects are the stored objects the snapshot's filter kept, as they
	// were at that point, in no particular order.
	Objects []interface{}
}

// SnapshotQueuer is implemented by this package's shared informers.
type SnapshotQueuer interface {
	// QueueSnapshot takes, between two applied changes, the stored
	// objects for which keep returns true (none if keep is nil), and
	// queues the snapshot with tag to every handler registered then that
	// is a SnapshotHandler, in order with its notifications. It never
	// waits for a handler; it holds up the applying of changes only while
	// it reads the store. Handlers added later do not get it; on an
	// informer that has not started, the snapshot holds no objects and is
	// delivered before the first list's notifications.
	QueueSnapshot(keep func(obj interface{}) bool, tag any)
}

var _ SnapshotQueuer = &sharedIndexInformer{}

// QueueSnapshot implements SnapshotQueuer.
func (s *sharedIndexInformer) QueueSnapshot(keep func(obj interface{}) bool, tag any) {
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	snap := &Snapshot{Tag: tag, ResourceVersion: s.position.rv}
	if keep != nil {
		for _, obj := range s.indexer.List() {
			if keep(obj) {
				snap.Objects = append(snap.Objects, obj)
			}
		}
	}
	s.processor.distributeSnapshot(snap)
}

// storePosition is the resourceVersion of the last change applied to an
// informer's store; written and read under the informer's blockDeltas.
type storePosition struct{ rv string }

// advance records the position d brings the store to: a watch event's
// object's resourceVersion, a whole list's, a bookmark's. Per-object
// replacements and resyncs carry no position and leave it alone.
func (p *storePosition) advance(d Delta) {
	if p == nil {
		return
	}
	switch d.Type {
	case Added, Updated, Deleted:
		// A compact informer's deltas carry records (see versionOf).
		if rv, ok := versionOf(d.Object); ok {
			p.rv = rv
		}
	case ReplacedAll:
		if info, ok := d.Object.(ReplacedAllInfo); ok {
			p.rv = info.ResourceVersion
		}
	case Bookmark:
		if info, ok := d.Object.(BookmarkInfo); ok {
			p.rv = info.ResourceVersion
		}
	}
}

// distributeSnapshot queues snap to every listener whose handler takes
// snapshots.
func (p *processor) distributeSnapshot(snap *Snapshot) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, l := range p.listeners {
		if _, ok := l.handler.(SnapshotHandler); ok {
			l.add(notification{kind: notifySnapshot, obj: snap})
		}
	}
}
