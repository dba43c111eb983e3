package compact

import "unsafe"

// Frozen is a record's packed bytes, held in a string's two words where a
// slice takes three: a compact store keeps one per object, so the word
// saved is a word per object. The bytes never change once frozen.
type Frozen string

// Freeze returns b as Frozen without copying it. The caller gives b up:
// neither it nor anything else may change b's bytes afterwards.
func Freeze(b []byte) Frozen { return Frozen(unsafe.String(unsafe.SliceData(b), len(b))) }

// Bytes returns the bytes, without copying them: the caller must not
// change them. It returns nil for no bytes.
func (f Frozen) Bytes() []byte { return unsafe.Slice(unsafe.StringData(string(f)), len(f)) }
