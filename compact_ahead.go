package cache

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// encodeAhead packs the objects of one initial LIST into a compact
// store's bytes where they are decoded (on our ListWatch's decode
// workers, as the hint's item function), so that the records made of
// them once their page reaches the Reflector take those bytes instead of
// encoding each object then: on the Reflector's goroutine a whole LIST's
// 100,000 objects were encoded only after the last one arrived.
//
// It is only offered when nothing changes an object between its decoding
// and its packing: no transform, and (checked per page by the pager) a
// page our ListWatch returned untouched to the Reflector that called it
// (listhint's Untouched). Bytes never taken (a page left out, an object
// copied since) go with it when the LIST ends.
type encodeAhead struct {
	store *compactStore
	done  sync.Map // the decoded object → *packedAhead
}

// packedAhead is an object's packed bytes and their length before
// compression, as packer.pack returns them.
type packedAhead struct {
	data  []byte
	plain int
}

// encodeAhead returns the encoder ahead for a LIST of in's, or nil when
// in packs no records, or packs them after a transform.
func (in *intake) encodeAhead() *encodeAhead {
	if in == nil || in.pack == nil || in.pack.transform != nil {
		return nil
	}
	return &encodeAhead{store: in.pack.store}
}

// encode packs obj and keeps its bytes for take; it may run on any
// goroutine, many at once. An object whose type has no codec, or that
// fails to pack, is left to the page's packing (which meets the failure
// again and reports it).
func (a *encodeAhead) encode(obj runtime.Object) {
	pk := a.store.packerFor(obj)
	if pk == nil {
		return
	}
	data, plain, err := pk.pack(obj)
	if err != nil {
		return
	}
	a.done.Store(obj, &packedAhead{data: data, plain: plain})
}

// take returns, and forgets, the bytes packed ahead of obj (false if
// none; a nil encoder has none).
func (a *encodeAhead) take(obj any) (*packedAhead, bool) {
	if a == nil {
		return nil, false
	}
	v, ok := a.done.LoadAndDelete(obj)
	if !ok {
		return nil, false
	}
	return v.(*packedAhead), true
}

// forget drops the bytes packed ahead of items, which are packed without
// them (their page was not returned untouched).
func (a *encodeAhead) forget(items []any) {
	if a == nil {
		return
	}
	for _, it := range items {
		a.done.Delete(it)
	}
}
