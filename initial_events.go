package cache

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// initialEvents gathers the objects of a WatchList stream until its
// initial-events-end bookmark. Objects are kept in arrival order; a key
// index is only built if a MODIFIED or DELETED event arrives before the
// bookmark, which a conforming server does not send, so the common path
// costs one slice append per object.
type initialEvents struct {
	items []interface{}
	// index maps keys to positions in items; nil until first needed.
	index map[string]int
	// transform is the store's own transform, applied as objects arrive so
	// the untransformed originals can be collected at once.
	transform TransformFunc
	// resourceVersion is the RV of the last non-ADDED event (the bookmark).
	resourceVersion string
	// in prepares each object before the transform (nil: nothing to do),
	// looking for held objects if reuse; reused counts those it found,
	// which are gathered as they are, untransformed (they were when the
	// store got them). notDecoded counts those of them the ListWatch
	// did not even decode (addHeld).
	in         *intake
	reuse      bool
	reused     int
	notDecoded int
}

func newInitialEvents(store ReflectorStore, in *intake, leaned bool) *initialEvents {
	e := &initialEvents{in: in, reuse: in.reusing()}
	if leaned && !e.reuse {
		// The objects arrive with the intake's steps done (see
		// intake.watchItem): nothing is left to prepare.
		e.in = nil
	}
	if ts, ok := store.(TransformingStore); ok {
		e.transform = ts.Transformer()
	}
	return e
}

// Add appends obj.
func (e *initialEvents) Add(obj interface{}) error {
	obj, err := e.prepared(obj)
	if err != nil {
		return err
	}
	if e.index != nil {
		return e.put(obj)
	}
	e.push(obj)
	return nil
}

// Update replaces the gathered object with obj's key, or adds obj.
func (e *initialEvents) Update(obj interface{}) error {
	obj, err := e.prepared(obj)
	if err != nil {
		return err
	}
	if err := e.buildIndex(); err != nil {
		return err
	}
	return e.put(obj)
}

// Delete drops the gathered object with obj's key.
func (e *initialEvents) Delete(obj interface{}) error {
	if err := e.buildIndex(); err != nil {
		return err
	}
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	if i, ok := e.index[key]; ok {
		e.items[i] = nil
		delete(e.index, key)
	}
	return nil
}

// addHeld appends held, the object the store holds for an initial event
// that was not decoded (see streamer.applyStandin): reused, as prepared
// would find it, without a decode.
func (e *initialEvents) addHeld(held interface{}) error {
	e.reused++
	e.notDecoded++
	if e.index != nil {
		return e.put(held)
	}
	e.push(held)
	return nil
}

// prepared is what is gathered for obj: the held object standing for it
// (see intake.prepare), or obj prepared and transformed.
func (e *initialEvents) prepared(obj interface{}) (interface{}, error) {
	if o, ok := obj.(runtime.Object); ok && e.in != nil {
		out, reused := e.in.prepare(o, e.reuse)
		if reused {
			e.reused++
			return out, nil
		}
		obj = out
	}
	return e.transformed(obj)
}

func (e *initialEvents) transformed(obj interface{}) (interface{}, error) {
	if e.transform == nil {
		return obj, nil
	}
	out, err := e.transform(obj)
	if err != nil {
		return nil, fmt.Errorf("transforming %T: %w", obj, err)
	}
	return out, nil
}

func (e *initialEvents) buildIndex() error {
	if e.index != nil {
		return nil
	}
	e.index = make(map[string]int, len(e.items))
	for i, obj := range e.items {
		key, err := gatheredKey(obj)
		if err != nil {
			return err
		}
		e.index[key] = i
	}
	return nil
}

// gatheredKey is the key of a gathered object: a compact store's record
// (a held object reused) carries its own.
func gatheredKey(obj interface{}) (string, error) {
	if r, ok := obj.(*compactRecord); ok {
		return r.key, nil
	}
	return DeletionHandlingMetaNamespaceKeyFunc(obj)
}

func (e *initialEvents) put(obj interface{}) error {
	key, err := gatheredKey(obj)
	if err != nil {
		return err
	}
	if i, ok := e.index[key]; ok {
		e.items[i] = obj
		return nil
	}
	e.index[key] = len(e.items)
	e.push(obj)
	return nil
}

// minInitialCap is the capacity of the first buffer of initial objects.
const minInitialCap = 64

// push appends obj to items, doubling the buffer when it is full.
// append's own growth slows to 1.25x for large slices, which over a long
// stream allocates more than five times the final size in buffers that
// are thrown away at once; doubling allocates less than four times
// (about 2.6 times for 50,000 objects).
func (e *initialEvents) push(obj interface{}) {
	if len(e.items) == cap(e.items) {
		grown := make([]interface{}, len(e.items), max(minInitialCap, 2*cap(e.items)))
		copy(grown, e.items)
		e.items = grown
	}
	e.items = append(e.items, obj)
}

// take returns the gathered objects, without the holes deletions left.
func (e *initialEvents) take() []interface{} {
	if e.index == nil {
		return e.items
	}
	out := e.items[:0]
	for _, obj := range e.items {
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out
}
