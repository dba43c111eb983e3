package listdecode

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Target is the kind of client whose decoding of a LIST response Decode
// reproduces. Set exactly one field.
type Target struct {
	// Typed is a list of a clientset, e.g. &corev1.PodList{} (only its
	// type matters): the body is decoded as the clientset's REST client
	// decodes it, with client-go's kubernetes scheme
	// (rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs)
	// .WithoutConversion(): the list's kind and apiVersion are cleared),
	// into a new list of this type (Result.Into).
	Typed runtime.Object
	// Unstructured decodes as the dynamic client's List: into an
	// *unstructured.UnstructuredList, JSON only; items without kind and
	// apiVersion get the list's.
	Unstructured bool
	// Metadata decodes as the metadata client's List: a
	// *metav1.PartialObjectMetadataList, from JSON or protobuf.
	Metadata bool
}

// Options tune Decode.
type Options struct {
	// Workers is how many goroutines decode items. <= 1: items are
	// decoded on the calling goroutine, and Decode starts no goroutine.
	Workers int
	// Meta, if set, is called once, on the calling goroutine, with the
	// list's metadata: as soon as it is known, when it comes before the
	// items (kube-apiserver writes it first), so that the caller can ask
	// for the next page early; else after the body has been decoded
	// successfully. Called early, it is the first metadata in the body
	// (the result's is the last, should the body have two).
	Meta func(metav1.ListMeta)
	// Item, if set, is called with each item right after it is decoded,
	// on the goroutine that decoded it (a worker, or the calling goroutine):
	// it must be safe for concurrent use. Every item of the list Decode
	// returns has been through it, but those Held stood for, which were
	// not decoded. It may change the item (e.g.
	// share its strings) but not keep it: the item is an element of the
	// storage that becomes, or is copied into, the list's Items. Unstructured items get the list's
	// kind and apiVersion (when they have neither) only after that.
	Item func(runtime.Object)
	// Expect, if > 0, is how many items the list is expected to hold at
	// most (a page's limit): the items are decoded into one slice of that
	// length, which becomes Items with no copy when they fill at least
	// half of it.
	// Above maxExpect it is taken as maxExpect.
	Expect int
	// Owned, if set, asks for each item of a streamed typed or metadata
	// list to be decoded into an allocation of its own: Items then holds
	// a copy of each (a shallow one: a struct copy), and Owned is called
	// once, before Decode returns the list, with the list and those
	// allocations in Items' order, so that a caller that would copy every
	// item out of Items (meta.EachListItemWithAlloc, as a Reflector does)
	// can take them instead. Not called for a list decoded whole, nor
	// for an unstructured one unless Held is set too. The allocations are the caller's from then on. held
	// is nil unless Held stood for some items: then it has one element per
	// item, what Held returned for those (whose element of items is nil)
	// and nil for the others.
	Owned func(list runtime.Object, items []runtime.Object, held []any)
	// Held, if set with Owned, is asked before each item of a streamed
	// typed or metadata list is decoded, with the item's namespace, name
	// and non-empty resourceVersion as its bytes hold them: in protobuf,
	// for a type whose metadata is its field 1 (every type of k8s.io/api:
	// see protometa.For, protometa.Identity); in JSON, for a type whose
	// metav1.ObjectMeta is its "metadata" and that has no UnmarshalJSON
	// (every type of k8s.io/api, and custom resources' types as
	// generators write them: see jsonmeta.Identity), or unstructured (see
	// jsonmeta.MapIdentity). Items whose identity
	// cannot be read exactly are decoded. When it returns ok, the item is not
	// decoded: obj stands for it in Owned's held, and its element of
	// Items is left the zero value. It is called on the calling
	// goroutine, in the items' order; the strings alias the body's
	// buffers and must not be kept. Bytes deeper in such an item are not
	// read, so a fault there that would fail the decode is not seen.
	Held func(namespace, name, resourceVersion string) (obj any, ok bool)
	// LeaveOutManagedFields says the caller drops every item's
	// managedFields (in Item or after Decode), so that the decoder may
	// leave them out: protobuf items of types
	// whose metadata is their field 1 (every typed object of k8s.io/api,
	// PartialObjectMetadata) are decoded without them (see
	// internal/protometa). Other items are decoded whole.
	LeaveOutManagedFields bool
}

// Decode decodes one LIST response body (the body of a 200 response,
// read from body as it arrives) into the object, or the error, that the
// Target's client returns for it, with the items decoded on up to
// o.Workers goroutines and put in Items in order.
//
// The format is sniffed: a body starting with the protobuf magic
// "k8s\x00" is protobuf; one whose first non-space byte is '{' is JSON;
// one starting with CBOR's self-describing tag is CBOR; anything else is
// taken for JSON. A JSON or protobuf list that names the Target's list
// kind before its items (and any body for Unstructured, in JSON) is
// streamed: its items are split off as they arrive and decoded by the
// workers while the rest is read, and the envelope (the body without the
// items) is decoded by the client's own decoder. Every other body is read
// whole and decoded by the client's decoder (see whole).
//
// Decode reads body to its end (unless ctx ends first) but never closes
// it. A read error is returned wrapped (%w); when ctx ends, Decode stops
// the workers and returns ctx.Err() wrapped, but a Read that blocks is
// not interrupted (the request's context does that). Every goroutine
// Decode starts has ended when it returns.
func Decode(ctx context.Context, body io.Reader, t Target, o Options) (runtime.Object, error) {
	p, err := newPlan(t)
	if err != nil {
		return nil, err
	}
	in := newInput(body)
	d := &decoding{ctx: ctx, p: p, o: o, in: in, media: sniff(in)}
	in.beforeRead = d.flushItems
	switch {
	case d.media == mediaJSON && in.pos < len(in.buf) && in.buf[in.pos] == '{':
		return d.json()
	case d.media == mediaProtobuf && p.protoItem != 0:
		return d.protobuf()
	}
	in.pos = 0
	return d.wholeBody(nil)
}

// sniff reads the first bytes of the body and names its media type; pos
// is left at the first non-space byte of a JSON body.
func sniff(in *input) string {
	in.mark = 0
	defer func() { in.mark = -1 }()
	in.ensure(len(protobufMagic))
	switch {
	case bytes.HasPrefix(in.buf, protobufMagic):
		in.pos = len(protobufMagic)
		return mediaProtobuf
	case bytes.HasPrefix(in.buf, cborMagic):
		return mediaCBOR
	}
	in.skipSpace()
	return mediaJSON
}

var (
	protobufMagic = []byte("k8s\x00")
	cborMagic     = []byte{0xd9, 0xd9, 0xf7}
)

// decoding is one call of Decode.
type decoding struct {
	ctx    context.Context
	p      *plan
	o      Options
	in     *input
	media  string
	sink   *sink
	called bool // Meta has been called
	// A JSON body may name its items more than once; encoding/json keeps
	// the last value. itemsFrom is the index, in the sink, of the last
	// items array's first item; itemsInEnvelope says the last value was
	// not an array (null, say) and is the envelope's to decode.
	itemsFrom       int
	itemsInEnvelope bool
}

// wholeBody decodes prefix followed by the rest of the body, read whole.
func (d *decoding) wholeBody(prefix []byte) (runtime.Object, error) {
	rest, err := d.in.rest()
	if err != nil {
		return nil, err
	}
	obj, listed, err := d.p.whole(d.media, append(prefix, rest...))
	if err != nil {
		return nil, err
	}
	d.eachItem(obj)
	if listed {
		d.lateMeta(obj)
	}
	return obj, nil
}

// eachItem calls Item, if set, on each item of list, decoded whole, on
// the calling goroutine: any list of the plan's type Decode returns (the
// metadata client's fallback to a list of another kind, decoded as
// PartialObjectMetadataList, included), so that every item it returns
// has been through Item.
func (d *decoding) eachItem(list runtime.Object) {
	if d.o.Item == nil || reflect.TypeOf(list) != reflect.PointerTo(d.p.listType) {
		return
	}
	items := reflect.ValueOf(list).Elem().Field(d.p.itemsIdx)
	for i := range items.Len() {
		d.o.Item(items.Index(i).Addr().Interface().(runtime.Object))
	}
}

// json streams a JSON body.
func (d *decoding) json() (runtime.Object, error) {
	d.sink = newSink(d.ctx, d.p, d.media, d.o)
	defer d.sink.close()
	s := &jsonSplit{d: d, in: d.in}
	err := s.run()
	if s.whole && err == nil {
		return d.wholeBody(s.env)
	}
	return d.finish(err, s.env, d.jsonItemFirst)
}

// protobuf streams a protobuf body.
func (d *decoding) protobuf() (runtime.Object, error) {
	d.sink = newSink(d.ctx, d.p, d.media, d.o)
	defer func() { d.sink.close() }() // the split may replace the sink
	s := &protoSplit{d: d, in: d.in}
	err := s.run()
	if s.whole && err == nil {
		return d.wholeBody(append(append([]byte(nil), protobufMagic...), s.before...))
	}
	return d.finish(err, s.envelope(), s.itemFirst)
}

// flushItems hands the items split off so far to the workers, before the
// body is read again (a read may wait for the server). A failure is ctx's
// end, which the split meets at its next item.
func (d *decoding) flushItems() {
	if d.sink != nil {
		d.sink.flush()
	}
}

// earlyMeta calls Meta with the list's metadata, if it is known before
// the items.
func (d *decoding) earlyMeta(get func() (metav1.ListMeta, bool)) {
	if d.o.Meta == nil || d.called {
		return
	}
	if m, ok := get(); ok {
		d.called = true
		d.o.Meta(m)
	}
}

// lateMeta calls Meta with the decoded list's metadata if it has not
// been called.
func (d *decoding) lateMeta(obj runtime.Object) {
	if d.o.Meta == nil || d.called {
		return
	}
	l, err := meta.ListAccessor(obj)
	if err != nil {
		return
	}
	d.called = true
	d.o.Meta(metav1.ListMeta{
		ResourceVersion:    l.GetResourceVersion(),
		Continue:           l.GetContinue(),
		RemainingItemCount: l.GetRemainingItemCount(),
		SelfLink:           l.GetSelfLink(),
	})
}

// finish joins the workers and makes Decode's result of a streamed body
// from the scan's error, the items' and the envelope's decoding.
// itemFirst tells, when both the envelope and item at have failed,
// whether the item's error comes first in client-go's decode.
func (d *decoding) finish(scanErr error, envelope []byte, itemFirst func(envErr error, at int) bool) (runtime.Object, error) {
	d.sink.close()
	if err := d.ctx.Err(); err != nil {
		return nil, fmt.Errorf("listdecode: %w", err)
	}
	if scanErr != nil {
		if err := d.in.drain(); err != nil {
			return nil, err
		}
	}
	itemErr, at, syntax := d.sink.errs.err()
	switch {
	case syntax:
		return nil, itemErr
	case scanErr != nil:
		return nil, scanErr
	}
	obj, listed, err := d.p.whole(d.media, envelope)
	switch {
	case err != nil && itemErr != nil && itemFirst(err, at):
		return nil, itemErr
	case err != nil:
		return nil, err
	case !listed:
		return obj, nil
	case itemErr != nil:
		return nil, itemErr
	}
	var held []any
	if n := d.sink.n - d.itemsFrom; n > 0 && !d.itemsInEnvelope {
		items := d.sink.items()
		d.p.setItems(obj, items.Slice(d.itemsFrom, items.Len()))
		var own []runtime.Object
		if own, held = d.sink.ownedFrom(d.itemsFrom); own != nil {
			d.o.Owned(obj, own, held)
		}
	}
	if u, ok := obj.(*unstructured.UnstructuredList); ok {
		fillKinds(u.Items, u, held)
	}
	d.lateMeta(obj)
	return obj, nil
}

// jsonItemFirst: the dynamic client checks the kind after decoding the
// items; encoding/json returns an error that stops it (an item's) before
// a type error it saved (the envelope's).
func (d *decoding) jsonItemFirst(envErr error, at int) bool {
	if d.p.mode == unstructuredMode {
		return runtime.IsMissingKind(envErr)
	}
	item, _, _ := d.sink.errs.err()
	return isTypeError(envErr) && !isTypeError(item)
}
