package listdecode

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kreflector/cache/internal/jsonmeta"
	"github.com/kreflector/cache/internal/protometa"
)

// Chunk sizes of the item storage: the first chunk holds firstChunk
// items (or Options.Expect, up to maxExpect), each next one twice as
// many, up to maxChunk (or the first chunk's size, if larger).
const (
	firstChunk = 16
	maxChunk   = 1024
	maxExpect  = 2000
)

// job is one item to decode: its index, its bytes and where it goes.
type job struct {
	i    int
	data []byte
	dst  reflect.Value // an addressable element of a chunk
}

// jobBatch is the most items handed to a worker at once. Items go to the
// workers in batches, each as it fills or before the body is read again
// (flush), so that a worker is woken once per batch: a goroutine woken per
// item waited for a processor longer than an item takes to decode (the
// runtime takes a woken goroutine over to an idle processor only after a
// sleep that Linux's timer slack makes 50-80 µs), and the workers took
// turns on one core.
const jobBatch = 16

// sink decodes the items of one list, in order, into chunks of storage
// that make the list's Items at the end, on up to workers goroutines
// (none when workers <= 1: each item is decoded as it is handed in).
// At most 3×workers batches are handed in and not decoded.
//
// Its methods are called on the calling goroutine of Decode; workers only
// decode into the element a job names and record their errors (errs has
// its own lock). close joins every worker it started.
type sink struct {
	ctx    context.Context
	dec    func(data []byte, dst reflect.Value) error
	item   func(runtime.Object)
	itemsT reflect.Type
	chunks []reflect.Value
	// own: each item is decoded into an allocation of its own (owned[i],
	// a pointer), and items copies them into Items (see Options.Owned).
	own   bool
	owned []reflect.Value
	// held is Options.Held when it may be asked (see heldItem), and
	// standIns the items it stood for: their element of owned is the
	// zero Value.
	held func(namespace, name, resourceVersion string) (any, bool)
	// identity reads an item's identity from its bytes in the body's
	// format, for held.
	identity func(data []byte) (namespace, name, resourceVersion []byte, ok bool)
	standIns []standIn
	first    int // the first chunk's size
	// lastStart is the index of the last chunk's first item.
	lastStart int
	n         int // items handed in
	workers   int
	pending   []job // the batch being filled
	jobs      chan []job
	wg        sync.WaitGroup
	errs      *itemErrors
}

// standIn is what Options.Held gave for item i.
type standIn struct {
	i   int
	obj any
}

func newSink(ctx context.Context, p *plan, media string, o Options) *sink {
	s := &sink{
		ctx:     ctx,
		dec:     p.itemDecoder(media, o.LeaveOutManagedFields),
		item:    o.Item,
		itemsT:  p.itemsType,
		first:   firstChunkOf(o.Expect),
		own:     o.Owned != nil && (p.ownable() || p.mode == unstructuredMode && o.Held != nil),
		workers: o.Workers,
		errs:    newItemErrors(media == mediaJSON, p.mode != unstructuredMode),
	}
	switch {
	case !s.own:
	case media == mediaProtobuf && protometa.For(p.itemsType.Elem()) != nil:
		s.held, s.identity = o.Held, protometa.Identity
	case media == mediaJSON && p.mode == unstructuredMode:
		s.held, s.identity = o.Held, jsonmeta.MapIdentity
	case media == mediaJSON && jsonmeta.MetaType(p.itemsType.Elem()):
		s.held, s.identity = o.Held, jsonmeta.Identity
	}
	return s
}

// heldItem returns what Options.Held gives for the item whose bytes are
// data, if it may be asked and data's identity can be read.
func (s *sink) heldItem(data []byte) (any, bool) {
	if s.held == nil {
		return nil, false
	}
	ns, name, rv, ok := s.identity(data)
	if !ok || len(name) == 0 || len(rv) == 0 {
		return nil, false
	}
	return s.held(view(ns), view(name), view(rv))
}

// view is b as a string sharing its bytes, valid while b is unchanged.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// firstChunkOf is the first chunk's size for Options.Expect.
func firstChunkOf(expect int) int {
	if expect <= 0 {
		return firstChunk
	}
	return min(expect, maxExpect)
}

// slot is the storage of item i (i == s.n): an allocation of its own
// when the sink owns its items, else the next element of the last chunk,
// or of a new chunk if the last one is full.
func (s *sink) slot(i int) reflect.Value {
	if s.own {
		v := reflect.New(s.itemsT.Elem())
		s.owned = append(s.owned, v)
		return v.Elem()
	}
	if len(s.chunks) == 0 || i == s.lastStart+s.chunks[len(s.chunks)-1].Len() {
		size := s.first
		if n := len(s.chunks); n > 0 {
			s.lastStart = i
			size = min(2*s.chunks[n-1].Len(), max(maxChunk, s.first))
		}
		s.chunks = append(s.chunks, reflect.MakeSlice(s.itemsT, size, size))
	}
	return s.chunks[len(s.chunks)-1].Index(i - s.lastStart)
}

// add hands in the next item's bytes; a full batch goes to the workers.
// It blocks while the workers have 2*workers batches waiting, and returns
// ctx's error (wrapped) if ctx ends first.
func (s *sink) add(data []byte) error {
	if obj, ok := s.heldItem(data); ok {
		s.standIns = append(s.standIns, standIn{i: s.n, obj: obj})
		s.owned = append(s.owned, reflect.Value{})
		s.n++
		return nil
	}
	j := job{i: s.n, data: data, dst: s.slot(s.n)}
	s.n++
	if s.workers <= 1 {
		if err := s.ctx.Err(); err != nil {
			return fmt.Errorf("listdecode: %w", err)
		}
		s.run(j)
		return nil
	}
	s.pending = append(s.pending, j)
	if len(s.pending) < jobBatch {
		return nil
	}
	return s.flush()
}

// flush hands the batch being filled to the workers, if it holds any
// item; as add, it blocks for room and fails if ctx ends first.
func (s *sink) flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	if s.jobs == nil {
		s.start()
	}
	batch := s.pending
	s.pending = make([]job, 0, jobBatch)
	select {
	case s.jobs <- batch:
		return nil
	case <-s.ctx.Done():
		return fmt.Errorf("listdecode: %w", s.ctx.Err())
	}
}

// start starts the workers; close joins them.
func (s *sink) start() {
	s.jobs = make(chan []job, 2*s.workers)
	s.wg.Add(s.workers)
	for range s.workers {
		go func() {
			defer s.wg.Done()
			for batch := range s.jobs {
				for _, j := range batch {
					if s.ctx.Err() == nil {
						s.run(j)
					}
				}
			}
		}()
	}
}

// run decodes one item, or only checks its syntax once an earlier item
// has decided the error, and records the outcome.
func (s *sink) run(j job) {
	if s.errs.decided(j.i) {
		s.errs.add(j.i, j.data, nil, true)
		return
	}
	err := s.dec(j.data, j.dst)
	if err != nil {
		s.errs.add(j.i, j.data, err, false)
		return
	}
	if s.item != nil {
		s.item(j.dst.Addr().Interface().(runtime.Object))
	}
}

// close hands in the last batch, then stops and joins the workers: every
// item handed in has been decoded (or skipped, once ctx has ended) when it
// returns. It may be called more than once.
func (s *sink) close() {
	s.flush()
	if s.jobs != nil {
		close(s.jobs)
		s.wg.Wait()
		s.jobs = nil
	}
}

// items is the Items slice of the n items handed in, in order; call after
// close. Items the sink owns are gathered (see gather). Otherwise, items
// that fill at least half of the first chunk, the only one,
// are that chunk, uncopied (a short last page is copied, so that the list
// holds no more than twice its items); otherwise the chunks are copied
// into one slice, by the workers at once
// when there are parallelCopy items or more (the copy of 100,000 Pods
// takes a third of a second on one core, after every item is decoded).
func (s *sink) items() reflect.Value {
	if s.own {
		return s.gather()
	}
	if len(s.chunks) == 1 && 2*s.n >= s.chunks[0].Len() {
		out := s.chunks[0].Slice(0, s.n)
		s.chunks = nil
		return out
	}
	out := reflect.MakeSlice(s.itemsT, s.n, s.n)
	type part struct {
		at    int
		chunk reflect.Value
	}
	var parts []part
	for at, c := 0, 0; at < s.n; c++ {
		k := min(s.chunks[c].Len(), s.n-at)
		parts = append(parts, part{at, s.chunks[c].Slice(0, k)})
		at += k
	}
	s.chunks = nil
	copyPart := func(p part) { reflect.Copy(out.Slice(p.at, p.at+p.chunk.Len()), p.chunk) }
	if s.workers <= 1 || s.n < parallelCopy {
		for _, p := range parts {
			copyPart(p)
		}
		return out
	}
	var wg sync.WaitGroup
	for w := range min(s.workers, len(parts)) {
		wg.Go(func() {
			for k := w; k < len(parts); k += s.workers {
				copyPart(parts[k])
			}
		})
	}
	wg.Wait()
	return out
}

// parallelCopy is the fewest items whose chunks the workers copy at once.
const parallelCopy = 4096

// gather is items for a sink that owns its items: a copy of each (a
// shallow one, as EachListItemWithAlloc makes the other way), by the
// workers at once when there are parallelCopy items or more.
func (s *sink) gather() reflect.Value {
	out := reflect.MakeSlice(s.itemsT, s.n, s.n)
	copyRange := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if s.owned[i].IsValid() { // else a stand-in's: left zero
				out.Index(i).Set(s.owned[i].Elem())
			}
		}
	}
	if s.workers <= 1 || s.n < parallelCopy {
		copyRange(0, s.n)
		return out
	}
	per := (s.n + s.workers - 1) / s.workers
	var wg sync.WaitGroup
	for lo := 0; lo < s.n; lo += per {
		wg.Go(func() { copyRange(lo, min(lo+per, s.n)) })
	}
	wg.Wait()
	return out
}

// ownedFrom is the items from index from on, each in its allocation (nil
// for a stand-in's), and what stood in for items (nil if none), for
// Options.Owned; nil if the sink does not own its items.
func (s *sink) ownedFrom(from int) (own []runtime.Object, held []any) {
	if !s.own {
		return nil, nil
	}
	own = make([]runtime.Object, len(s.owned)-from)
	for i, v := range s.owned[from:] {
		if v.IsValid() {
			own[i] = v.Interface().(runtime.Object)
		}
	}
	for _, st := range s.standIns {
		if st.i < from {
			continue
		}
		if held == nil {
			held = make([]any, len(own))
		}
		held[st.i-from] = st.obj
	}
	return own, held
}
