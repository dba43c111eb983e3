package watchdecode

import (
	"errors"
	"io"
	"mime"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	restwatch "k8s.io/client-go/rest/watch"
)

// The media types a watcher splits into frames itself.
const (
	mediaJSON     = runtime.ContentTypeJSON
	mediaProtobuf = runtime.ContentTypeProtobuf
)

// framing is how the reader splits a stream into frames.
type framing int

const (
	// framingNone: it does not; the stream is decoded by client-go's
	// chain alone, on one goroutine.
	framingNone framing = iota
	// framingJSON: a sequence of JSON objects (json.Framer).
	framingJSON
	// framingLength: 4-byte big-endian lengths, each followed by as many
	// bytes (protobuf.LengthDelimitedFramer).
	framingLength
)

// streams decodes the watch streams of one media type as the rest client
// negotiates them: the framer and streaming serializer of the WatchEvents,
// the decoder of their objects. Immutable; its decoders are safe for
// concurrent use (as client-go shares them between watches).
type streams struct {
	objects runtime.Decoder
	events  runtime.Serializer
	framer  runtime.Framer
	framing framing
}

// Decoders are the decoders of one client's watch streams, negotiated once
// from its serializer. Safe for concurrent use by any number of watchers.
type Decoders struct {
	serializer     runtime.NegotiatedSerializer
	json, protobuf *streams
}

// NewDecoders negotiates, as the rest client does for a watch response,
// the decoders of JSON and protobuf watch streams from s, the client's
// rest.Config.NegotiatedSerializer: for a clientset
// kubernetes/scheme.Codecs.WithoutConversion(); for the dynamic client
// dynamic.ConfigFor(c).NegotiatedSerializer (unstructured JSON); for the
// metadata client metadata.ConfigFor(c).NegotiatedSerializer
// (PartialObjectMetadata). It fails if s decodes neither.
func NewDecoders(s runtime.NegotiatedSerializer) (*Decoders, error) {
	d := &Decoders{serializer: s}
	d.json, _ = negotiate(s, mediaJSON)
	d.protobuf, _ = negotiate(s, mediaProtobuf)
	if d.json == nil && d.protobuf == nil {
		return nil, errors.New("watchdecode: the serializer decodes neither JSON nor protobuf watch streams")
	}
	return d, nil
}

// negotiate is the rest client's StreamDecoder for mediaType (with its
// parameters), and the framing the reader may use for it.
func negotiate(s runtime.NegotiatedSerializer, mediaType string) (*streams, error) {
	// As rest.Request.Watch: a Content-Type that does not parse leaves
	// what ParseMediaType returns anyway ("" picks the first media type).
	media, params, _ := mime.ParseMediaType(mediaType)
	n := runtime.NewClientNegotiator(s, schema.GroupVersion{})
	objects, events, framer, err := n.StreamDecoder(media, params)
	if err != nil {
		return nil, err
	}
	st := &streams{objects: objects, events: events, framer: framer}
	switch {
	case framer == json.Framer && media == mediaJSON:
		st.framing = framingJSON
	case framer == protobuf.LengthDelimitedFramer && media == mediaProtobuf:
		st.framing = framingLength
	}
	return st, nil
}

// forMedia is the streams of a declared media type (Options.MediaType).
func (d *Decoders) forMedia(mediaType string) (*streams, error) {
	media, _, _ := mime.ParseMediaType(mediaType)
	switch {
	case media == mediaJSON && d.json != nil:
		return d.json, nil
	case media == mediaProtobuf && d.protobuf != nil:
		return d.protobuf, nil
	}
	return negotiate(d.serializer, mediaType)
}

// sniff is the streams of a stream that begins with b: JSON if b[0] may
// begin a JSON object (whitespace or '{'), protobuf otherwise; whichever
// the client has if it has one only; JSON if b is empty (the stream then
// ends before a byte, alike with either).
func (d *Decoders) sniff(b []byte) *streams {
	switch {
	case d.protobuf == nil:
		return d.json
	case d.json == nil:
		return d.protobuf
	case len(b) == 0 || b[0] == '{' || isSpace(b[0]):
		return d.json
	}
	return d.protobuf
}

// isSpace is JSON's whitespace, which encoding/json skips between values.
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\r' || b == '\n'
}

// chain is client-go's decoder of a watch stream over r: the framer's
// frame reader, the streaming decoder of WatchEvents, rest/watch's Decoder
// of the events' types and objects (as rest.Request.Watch builds it).
func (s *streams) chain(r io.ReadCloser) *restwatch.Decoder {
	frames := s.framer.NewFrameReader(r)
	return restwatch.NewDecoder(streaming.NewDecoder(frames, s.events), s.objects)
}
