// Package listhint is the one statement of the contract between a
// Reflector's calls and the ListWatches this module builds: what travels
// in the context of a LIST call (each page of a paginated LIST) and of a
// WATCH call, beyond client-go's ListOptions. A Hint carries it.
//
// The Reflector's side (the root package's pager and watch opening):
//   - It makes one Hint per LIST (the whole run over its pages, retries
//     and the fallback to one unpaginated LIST included) or per WATCH
//     call, with With, passes the returned context to every call of it,
//     and Closes it when the LIST ends or the WATCH call has returned,
//     which cancels and joins every page requested ahead (Unused then
//     counts those never taken).
//   - The ItemFunc it offers (nil: none) is its own per-item work (lean
//     objects' steps), safe to run concurrently and on any goroutine; it
//     does that work itself on a page whose items the ListWatch did not
//     report as done (TookItems) and, for a watch, unless the ListWatch
//     took WatchItem (WatchItemized).
//   - noManagedFields promises that it drops every object's
//     managedFields before anything reads them.
//
// A ListWatch's side (internal/listwatch's REST ListWatch): it finds the
// Hint with From (nil, whose methods all offer nothing, when the call is
// not a Reflector's) and may, and only then must:
//   - run Item on every item of a list it returns, then report the list
//     with Itemized (all of its items or none: a list reported has had
//     Item run on each);
//   - report with Owned the items of a list it returns that it decoded
//     into allocations of their own, of which Items holds copies: the
//     Reflector then keeps those allocations rather than copying each
//     item out of Items, for every item whose element of Items is still
//     what was copied there (a ListerWatcher wrapping ours may have
//     changed it);
//   - if offered HeldFunc, ask it, before decoding each item, for what
//     the store holds at the item's key and resourceVersion, and not
//     decode an item it answers for: its element of Items is then the
//     zero value, and Owned reports what answered for it, which the
//     Reflector takes in its place. The Reflector offers it only to a
//     ListWatch whose lists come to it with nothing of anyone else's
//     between (internal/listwatch's Direct), as no one else could make
//     sense of such a list;
//   - if offered HeldFunc for a WATCH call, ask it the same for the ADDED
//     events at the start of the stream (a WatchList's initial events; up
//     to the first event of another type) and, for an event it answers
//     for, deliver a *Standin holding its answer instead of decoding the
//     object. The Reflector offers it only for a WatchList, on the same
//     terms as for a LIST;
//   - run WatchItem, once taken, on every object of the watch it opens
//     (not on a Standin);
//   - leave managedFields out of what it decodes only if
//     LeaveOutManagedFields says so;
//   - answer a page from one requested ahead (Take), and request the
//     next page ahead (Ahead, with Next's options) as soon as a page's
//     continue token is known; at most MaxAhead pages are ahead;
//   - use the call's context only for that call's own requests: a
//     ListerWatcher wrapping ours must not pass it on to calls whose
//     objects others consume (they might lack managedFields, or have been
//     through Item).
//
// A ListWatch that does not know this package ignores the Hint: the
// Reflector then treats its pages and events as it always did.
package listhint

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// ItemFunc is the Reflector's work on one decoded object, which a
// ListWatch may run where it decodes it (on any goroutine, concurrently);
// see the package documentation for what running it commits to.
type ItemFunc func(runtime.Object)

// HeldFunc is the Reflector's lookup of what its store holds: obj and
// true when the store holds the object of that namespace and name at
// exactly that (non-empty) resourceVersion, which by the API's contract
// is the same content. It must be safe for concurrent use and must not
// keep the strings it is given.
type HeldFunc func(namespace, name, resourceVersion string) (obj any, ok bool)

// Hint is one LIST's (or one WATCH call's) offer, under the contract the
// package documentation states. Its methods are safe for concurrent use;
// a nil *Hint offers nothing.
type Hint struct {
	// item, if not nil, is run on each decoded item (concurrently).
	item ItemFunc
	// noManagedFields says every object is stripped of its managedFields
	// before anything reads them (see With).
	noManagedFields bool
	// ctx is the LIST's context, cancelled by Close: pages requested
	// ahead run under it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// ahead holds the pages requested ahead, oldest first; waiting is
	// the next one, held back while MaxAhead are ahead.
	ahead   []*page
	waiting *pending
	// itemized holds the lists whose items item has already seen;
	// watchItemized says a watch's objects go through item.
	itemized      map[runtime.Object]bool
	watchItemized bool
	// owned holds, for a list, its items decoded into allocations of
	// their own (Owned), numbered in the order reported (ownedSeq), until
	// the Reflector takes them or they are too old to be (TakeOwned).
	owned map[runtime.Object]ownedItems
	// heldFunc is what the Reflector offered with OfferHeld (nil: none).
	heldFunc HeldFunc
	ownedSeq uint64
	closed   bool
	// unused counts the pages requested ahead and dropped: never taken.
	unused int
}

type key struct{}

// With (the Reflector's) returns ctx carrying a new hint, and the hint. item, if not nil,
// is what the ListWatch should run on each item as it is decoded; it
// must be safe for concurrent use. noManagedFields says the caller drops
// every object's managedFields before anything reads them, whether or not
// item runs, so that a decoder may leave them out. The caller must Close
// the hint.
func With(ctx context.Context, item ItemFunc, noManagedFields bool) (context.Context, *Hint) {
	h := &Hint{item: item, noManagedFields: noManagedFields, itemized: map[runtime.Object]bool{}, owned: map[runtime.Object]ownedItems{}}
	h.ctx, h.cancel = context.WithCancel(ctx)
	return context.WithValue(ctx, key{}, h), h
}

// From (the ListWatch's) returns the hint ctx carries, or nil.
func From(ctx context.Context) *Hint {
	h, _ := ctx.Value(key{}).(*Hint)
	return h
}

// Item (the ListWatch's) returns the function to run on each decoded
// item of a list, or nil.
func (h *Hint) Item() ItemFunc {
	if h == nil {
		return nil
	}
	return h.item
}

// LeaveOutManagedFields (the ListWatch's) says a decoder may leave out the managedFields of
// the objects it decodes: the caller drops them anyway.
func (h *Hint) LeaveOutManagedFields() bool { return h != nil && h.noManagedFields }

// Itemized (the ListWatch's) records that every item of list has been
// through Item.
func (h *Hint) Itemized(list runtime.Object) {
	if h == nil || h.item == nil {
		return
	}
	h.mu.Lock()
	if !h.closed {
		h.itemized[list] = true
	}
	h.mu.Unlock()
}

// ownedItems are a list's items in allocations of their own, what stood
// in for those not decoded, and the number of the report.
type ownedItems struct {
	items []runtime.Object
	held  []any
	seq   uint64
}

// OfferHeld (the Reflector's) offers f to the ListWatch (see HeldFunc and
// the package documentation), before the first call with the hint's
// context.
func (h *Hint) OfferHeld(f HeldFunc) {
	h.mu.Lock()
	h.heldFunc = f
	h.mu.Unlock()
}

// HeldFunc (the ListWatch's) returns what the Reflector offered to look
// up before decoding an item, or nil.
func (h *Hint) HeldFunc() HeldFunc {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.heldFunc
}

// Owned (the ListWatch's) records that items are list's items, in order,
// each in an allocation of its own that list's Items holds a copy of,
// but those HeldFunc answered for: held, if not nil, has one element per
// item, what answered for it (its element of items is then nil) or nil.
func (h *Hint) Owned(list runtime.Object, items []runtime.Object, held []any) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if !h.closed {
		h.ownedSeq++
		h.owned[list] = ownedItems{items: items, held: held, seq: h.ownedSeq}
	}
	h.mu.Unlock()
}

// TakeOwned (the Reflector's) returns what Owned recorded for list (nil
// if nothing), and forgets it; it also forgets every report but the
// MaxAhead+1 latest, those of the pages that may still be taken (at most
// MaxAhead are requested ahead of the one taken), so that lists nobody
// takes (a ListerWatcher wrapping ours returned others) do not pile up
// until the LIST ends. A report with stand-ins is kept until taken or
// until Close, however old: without it, its list's items that were not
// decoded could not be told from zero objects.
func (h *Hint) TakeOwned(list runtime.Object) (items []runtime.Object, held []any) {
	if h == nil {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.owned[list]
	delete(h.owned, list)
	oldest := h.ownedSeq - min(h.ownedSeq, MaxAhead+1)
	for l, e := range h.owned {
		if e.seq <= oldest && e.held == nil {
			delete(h.owned, l)
		}
	}
	return o.items, o.held
}

// TookItems (the Reflector's) says whether list's items have been through Item, and forgets
// list.
func (h *Hint) TookItems(list runtime.Object) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ok := h.itemized[list]
	delete(h.itemized, list)
	return ok
}

// Close (the Reflector's) cancels the pages requested ahead and waits for their calls to
// return. The hint then requests nothing more and forgets every list.
func (h *Hint) Close() {
	h.mu.Lock()
	h.closed = true
	h.dropLocked()
	h.itemized, h.owned = nil, nil
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// Unused (the Reflector's) returns how many pages were requested ahead and never taken (the
// LIST failed, or went its own way, first): requests the server answered
// (or began to) for nothing. Final once Close has returned.
func (h *Hint) Unused() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unused
}

// WatchItem (the ListWatch's) returns the function to run on each object a watch decodes,
// or nil, and records that the ListWatch runs it (see WatchItemized).
// Only a ListWatch that runs it on every object of the watch it opens
// may call it.
func (h *Hint) WatchItem() ItemFunc {
	if h == nil || h.item == nil {
		return nil
	}
	h.mu.Lock()
	h.watchItemized = true
	h.mu.Unlock()
	return h.item
}

// WatchItemized (the Reflector's) says whether the ListWatch took WatchItem: the objects of
// the watch it opened have been through the item function.
func (h *Hint) WatchItemized() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watchItemized
}
