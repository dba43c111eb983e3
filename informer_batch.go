package cache

import "sync"

// replaceBatch is what the handlers are told of one ReplacedAll's listed
// objects, in list order: OnAdd for the objects the store did not hold,
// OnUpdate(old, new) for the others. Every listener's backlog holds the
// batch as one entry (notifyBatch), which the listener expands into one
// notification at a time as it reaches them (item), so that a relist or
// an initial list of n objects does not queue n notifications, nor n
// handoffs, per listener: each listener keeps only its place.
//
// An update that keeps the object's resourceVersion goes only to the
// listeners whose resync was due when the batch was queued (the
// listener's entry says which: see memberOf), as distribute does for
// one notification.
//
// For a compact store's records, the listeners that reach an object share
// its handoffs (see handoff), made by the first to reach it (a listener or
// the warmer) and forgotten once the last listener has: only the objects
// between the slowest listener and the fastest (or the warmer) have any.
// A listener leaving with objects still to reach gives them up (leave).
type replaceBatch struct {
	objs, olds []any
	kinds      []batchKind
	// initial marks the adds as the initial list's.
	initial bool
	// adds, changed and same count the objects of each kind.
	adds, changed, same int

	mu sync.Mutex // guards what follows
	// all and syncing are the listeners the batch was queued to, less
	// those that left it half-way (leave), and of those, the ones whose
	// resync was due: a slot made for an object counts them.
	all, syncing int
	// slots holds each object's handoffs while some listener has still
	// to reach it (nil before the first does, spentSlot after the last
	// has). It is nil when there are no records to hand off.
	slots []*batchSlot
}

// batchKind is what the handlers are told of one listed object.
type batchKind uint8

const (
	// batchSkip: nothing (a merged reshard kept the object as it was).
	batchSkip batchKind = iota
	// batchAdd: OnAdd.
	batchAdd
	// batchChanged: OnUpdate, to every listener.
	batchChanged
	// batchSame: OnUpdate for an object whose resourceVersion did not
	// change, to the listeners whose resync was due.
	batchSame
)

// batchSlot is an object's handoffs in a batch, with how many listeners
// have still to reach it.
type batchSlot struct {
	old, obj any
	waiting  int
}

// spentSlot stands for the handoffs of an object every listener has
// reached.
var spentSlot = &batchSlot{}

// newReplaceBatch returns the batch telling of objs, with what the store
// held under each one's key before (olds[i], nil for nothing); kind says
// what each is. There is a slot for each object when one is a record
// with bytes.
func newReplaceBatch(objs, olds []any, initial bool, kind func(i int) batchKind) *replaceBatch {
	b := &replaceBatch{objs: objs, olds: olds, initial: initial, kinds: make([]batchKind, len(objs))}
	records := false
	for i := range objs {
		k := kind(i)
		b.kinds[i] = k
		switch k {
		case batchAdd:
			b.adds++
		case batchChanged:
			b.changed++
		case batchSame:
			b.same++
		}
		if k != batchSkip && !records {
			records = packedRecord(objs[i])
		}
	}
	if records {
		b.slots = make([]*batchSlot, len(objs))
	}
	return b
}

// packedRecord says whether obj is a compact store's record with bytes.
func packedRecord(obj any) bool {
	r, ok := obj.(*compactRecord)
	return ok && r.pk != nil
}

// listeners sets how many listeners the batch is queued to, and of those
// how many had their resync due.
func (b *replaceBatch) listeners(all, syncing int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all, b.syncing = all, syncing
}

// memberOf says whether a listener (syncing: its resync was due) is told
// of object i.
func (b *replaceBatch) memberOf(i int, syncing bool) bool {
	switch b.kinds[i] {
	case batchAdd, batchChanged:
		return true
	case batchSame:
		return syncing
	}
	return false
}

// told is how many of the batch's objects a listener is told of.
func (b *replaceBatch) told(syncing bool) int {
	if syncing {
		return b.adds + b.changed + b.same
	}
	return b.adds + b.changed
}

// reaching is how many listeners are still to reach object i. b.mu is
// held.
func (b *replaceBatch) reaching(i int) int {
	if b.kinds[i] == batchSame {
		return b.syncing
	}
	return b.all
}

// item is the notification a listener reaching object i is given, false
// if the listener is not told of it.
func (b *replaceBatch) item(i int, syncing bool) (notification, bool) {
	if !b.memberOf(i, syncing) {
		return notification{}, false
	}
	n := notification{kind: notifyUpdate, old: b.olds[i], obj: b.objs[i]}
	if b.kinds[i] == batchAdd {
		n = notification{kind: notifyAdd, obj: b.objs[i], initial: b.initial}
	}
	if b.slots == nil {
		return n, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.slot(i); s != nil {
		n.old, n.obj = s.old, s.obj
		b.reached(i, s)
	}
	return n, true
}

// slot returns object i's handoffs, made now if no one has reached it;
// nil if every listener has (not expected of a listener's call: it then
// gets the records, which it decodes for itself). b.mu is held.
func (b *replaceBatch) slot(i int) *batchSlot {
	if s := b.slots[i]; s == spentSlot {
		return nil
	} else if s != nil {
		return s
	}
	s := &batchSlot{waiting: b.reaching(i)}
	s.old, s.obj = handOffPair(b.olds[i], b.objs[i], s.waiting)
	b.slots[i] = s
	return s
}

// reached counts off one listener of object i's slot s; after the last,
// the slot is forgotten. b.mu is held.
func (b *replaceBatch) reached(i int, s *batchSlot) {
	if s.waiting--; s.waiting <= 0 {
		b.slots[i] = spentSlot
	}
}

// ahead returns the handoffs of object i for the warmer to decode, made
// now if no listener has reached it yet: none if every listener has.
func (b *replaceBatch) ahead(i int) (hs [2]*handoff) {
	if b.slots == nil {
		return hs
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kinds[i] == batchSkip || b.reaching(i) == 0 {
		return hs
	}
	if s := b.slot(i); s != nil {
		hs = handoffsOf(s.old, s.obj)
	}
	return hs
}

// leave takes a listener (syncing: its resync was due) off the batch, at
// object from, the first it has not reached: the handoffs made for the
// objects after are given up for it (abandon), and those made later do
// not count it.
func (b *replaceBatch) leave(from int, syncing bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all--
	if syncing {
		b.syncing--
	}
	if b.slots == nil {
		return
	}
	for i := from; i < len(b.slots); i++ {
		s := b.slots[i]
		if s == nil || s == spentSlot || !b.memberOf(i, syncing) {
			continue
		}
		for _, h := range handoffsOf(s.old, s.obj) {
			if h != nil {
				h.abandon()
			}
		}
		if h, ok := s.obj.(*handoff); ok && s.old == s.obj {
			h.abandon() // one handoff for both, taken twice
		}
		b.reached(i, s)
	}
}
