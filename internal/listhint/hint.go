// Package listhint is what a Reflector's paginated LIST, or its WATCH,
// offers the ListWatches this module builds, through the context of each
// call: a function to run on each item where it is decoded (so lean
// objects are made off the Reflector's path), and for a LIST a pipeline
// that requests the next page as soon as its continue token is known.
//
// A ListWatch that does not know this package ignores the hint: the
// Reflector then treats its pages as it always did. The hint belongs to
// one LIST (one pager run) or one WATCH call: the Reflector makes it with
// With and closes it when the LIST ends or the WATCH call returns, which
// cancels and joins every page requested ahead.
package listhint

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// Hint is one LIST's (or one WATCH call's) offer. Its methods are safe
// for concurrent use; a nil *Hint offers nothing. It travels in the
// context of the Reflector's calls: a ListerWatcher wrapping ours must
// not reuse that context for calls whose objects others consume (they
// might, for one, lack managedFields).
type Hint struct {
	// item, if not nil, is run on each decoded item (concurrently).
	item func(runtime.Object)
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
	closed        bool
	// unused counts the pages requested ahead and dropped: never taken.
	unused int
}

type key struct{}

// With returns ctx carrying a new hint, and the hint. item, if not nil,
// is what the ListWatch should run on each item as it is decoded; it
// must be safe for concurrent use. noManagedFields says the caller drops
// every object's managedFields before anything reads them, whether or not
// item runs, so that a decoder may leave them out. The caller must Close
// the hint.
func With(ctx context.Context, item func(runtime.Object), noManagedFields bool) (context.Context, *Hint) {
	h := &Hint{item: item, noManagedFields: noManagedFields, itemized: map[runtime.Object]bool{}}
	h.ctx, h.cancel = context.WithCancel(ctx)
	return context.WithValue(ctx, key{}, h), h
}

// From returns the hint ctx carries, or nil.
func From(ctx context.Context) *Hint {
	h, _ := ctx.Value(key{}).(*Hint)
	return h
}

// Item returns the function to run on each decoded item, or nil.
func (h *Hint) Item() func(runtime.Object) {
	if h == nil {
		return nil
	}
	return h.item
}

// LeaveOutManagedFields says a decoder may leave out the managedFields of
// the objects it decodes: the caller drops them anyway.
func (h *Hint) LeaveOutManagedFields() bool { return h != nil && h.noManagedFields }

// Itemized records that list's items have been through Item.
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

// TookItems says whether list's items have been through Item, and forgets
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

// Close cancels the pages requested ahead and waits for their calls to
// return. The hint then requests nothing more and forgets every list.
func (h *Hint) Close() {
	h.mu.Lock()
	h.closed = true
	h.dropLocked()
	h.itemized = nil
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// Unused returns how many pages were requested ahead and never taken (the
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

// WatchItem returns the function to run on each object a watch decodes,
// or nil, and records that the ListWatch runs it (see WatchItemized).
// Only a ListWatch that runs it on every object of the watch it opens
// may call it.
func (h *Hint) WatchItem() func(runtime.Object) {
	if h == nil || h.item == nil {
		return nil
	}
	h.mu.Lock()
	h.watchItemized = true
	h.mu.Unlock()
	return h.item
}

// WatchItemized says whether the ListWatch took WatchItem: the objects of
// the watch it opened have been through the item function.
func (h *Hint) WatchItemized() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watchItemized
}
