package compact

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/s2"
)

// Record forms: the first byte of what Squeeze returns.
const (
	formRaw  byte = 0 // the encoding as it was
	formS2   byte = 1 // an S2 block, no dictionary
	formDict byte = 2 // an S2 block against the trained dictionary
)

const (
	// trainSamples is how many encodings the dictionary is trained on: the
	// first ones squeezed. Until then records are compressed without one.
	trainSamples = 400
	// dictSize bounds the dictionary (S2's own bound is 64 KiB).
	dictSize = 64 << 10
)

// Squeezer compresses encodings with S2 (klauspost/compress: Snappy's
// format extended, a few GB/s each way) against a dictionary it trains
// on the first trainSamples encodings it is given: the objects of one
// resource are alike, and a record of a few kilobytes compresses against
// the dictionary about as well as a large body would. Records squeezed
// before the dictionary exists are compressed without it; every record
// stays readable. It is safe for concurrent use; training runs once, on
// the goroutine whose Squeeze completes the samples, and starts no
// goroutine.
type Squeezer struct {
	mu      sync.Mutex // guards samples
	samples [][]byte
	// tried is set once the dictionary has been trained, or tried.
	tried atomic.Bool

	dict atomic.Pointer[s2.Dict]
}

// NewSqueezer returns a Squeezer with no dictionary yet.
func NewSqueezer() *Squeezer { return &Squeezer{} }

// Squeeze returns src compressed, in a new slice of its exact length
// (src's bytes, marked raw, when compressing would not make them
// smaller). It does not keep src.
func (s *Squeezer) Squeeze(src []byte) []byte { return s.SqueezeAfter("", src) }

// SqueezeAfter returns head followed by what Squeeze(src) returns, in one
// new slice of their exact length: so that a record's key and its bytes
// take one allocation.
func (s *Squeezer) SqueezeAfter(head string, src []byte) []byte {
	s.sample(src)
	work := workBuffers.Get().(*[]byte)
	defer workBuffers.Put(work)
	need := s2.MaxEncodedLen(len(src))
	if cap(*work) < need {
		*work = make([]byte, need)
	}
	var (
		form byte
		body []byte
	)
	if d := s.dict.Load(); d != nil {
		form, body = formDict, d.Encode((*work)[:need], src)
	} else {
		form, body = formS2, s2.Encode((*work)[:need], src)
	}
	if len(body) >= len(src) {
		form, body = formRaw, src
	}
	out := make([]byte, len(head)+1+len(body))
	copy(out, head)
	out[len(head)] = form
	copy(out[len(head)+1:], body)
	if cap(*work) > maxWorkBuffer {
		*work = nil
	}
	return out
}

// workBuffers hold the room Squeeze compresses into, up to maxWorkBuffer
// bytes each.
var workBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxWorkBuffer = 256 << 10

// Expand returns what Squeeze was given, in dst's memory when it is large
// enough, else in memory of its own: never in rec's, so that the caller
// may reuse the result's memory as a later call's dst (a record kept as
// it came is copied out too).
func (s *Squeezer) Expand(dst, rec []byte) ([]byte, error) {
	if len(rec) == 0 {
		return nil, ErrCorrupt
	}
	body := rec[1:]
	var (
		out []byte
		err error
	)
	switch rec[0] {
	case formRaw:
		return append(dst[:0], body...), nil
	case formS2:
		out, err = s2.Decode(dst[:cap(dst)], body)
	case formDict:
		d := s.dict.Load()
		if d == nil {
			return nil, fmt.Errorf("%w: a dictionary record and no dictionary", ErrCorrupt)
		}
		out, err = d.Decode(dst[:cap(dst)], body)
	default:
		return nil, fmt.Errorf("%w: form %d", ErrCorrupt, rec[0])
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return out, nil
}

// Trained says whether records are now compressed with a dictionary.
func (s *Squeezer) Trained() bool { return s.dict.Load() != nil }

// sample keeps a copy of src until trainSamples are kept, then trains.
func (s *Squeezer) sample(src []byte) {
	if s.tried.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tried.Load() {
		return
	}
	s.samples = append(s.samples, append([]byte(nil), src...))
	if len(s.samples) < trainSamples {
		return
	}
	s.tried.Store(true) // once, whatever comes of it
	samples := s.samples
	s.samples = nil
	b, err := dict.BuildS2Dict(samples, dict.Options{MaxDictSize: dictSize, HashBytes: 6})
	if err != nil || len(b) == 0 {
		return // too little to learn from: records stay dictionary-less
	}
	if d := s2.NewDict(b); d != nil {
		s.dict.Store(d)
	}
}
