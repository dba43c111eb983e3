package listdecode

import (
	"fmt"
	"io"
)

// readSize is the least room a new buffer has for reading into; the
// first buffer is firstRead, for small bodies.
const (
	readSize  = 256 << 10
	firstRead = 16 << 10
)

// input is the body as it arrives, in buffers that are never written
// again once read into: an item's bytes can be a slice of a buffer, handed
// to a worker while input reads on into the same buffer's free end or a
// new one. A buffer lives as long as something holds a slice of it.
//
// The scanners look at buf[pos:] and move pos; mark (or -1) is where the
// bytes still wanted begin, kept when a new buffer is started. input is
// used by the calling goroutine only.
type input struct {
	r    io.Reader
	buf  []byte
	pos  int
	mark int
	err  error // io.EOF, or the read error (wrapped) that ended the body
	// beforeRead, if set, is called before each read of the body, which
	// may block: the items already split off go to the workers then.
	beforeRead func()
}

func newInput(r io.Reader) *input {
	return &input{r: r, buf: make([]byte, 0, firstRead), mark: -1}
}

// more reads at least one byte more into buf, starting a new buffer (with
// buf[mark:] or nothing copied in) when this one is full; pos and mark
// move with the bytes. It returns false at the end of the body; err then
// tells whether it ended cleanly (io.EOF).
func (in *input) more() bool {
	if in.err != nil {
		return false
	}
	if len(in.buf) == cap(in.buf) {
		keep := in.pos
		if in.mark >= 0 {
			keep = in.mark
		}
		kept := len(in.buf) - keep
		nb := make([]byte, kept, kept+max(readSize, kept))
		copy(nb, in.buf[keep:])
		in.buf, in.pos = nb, in.pos-keep
		if in.mark >= 0 {
			in.mark = 0
		}
	}
	if in.beforeRead != nil {
		in.beforeRead()
	}
	for {
		n, err := in.r.Read(in.buf[len(in.buf):cap(in.buf)])
		in.buf = in.buf[:len(in.buf)+n]
		if err != nil {
			in.err = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// ensure reads until n bytes are at pos; false if the body ends first.
func (in *input) ensure(n int) bool {
	for len(in.buf)-in.pos < n {
		if !in.more() {
			return len(in.buf)-in.pos >= n
		}
	}
	return true
}

// failed is the read error that ended the body, wrapped, or nil at a
// clean end (or none yet).
func (in *input) failed() error {
	if in.err == nil || in.err == io.EOF {
		return nil
	}
	return fmt.Errorf("listdecode: reading the body: %w", in.err)
}

// rest is buf[pos:] and everything after it, read whole: the body from
// pos on, when it is to be decoded whole.
func (in *input) rest() ([]byte, error) {
	out := append([]byte(nil), in.buf[in.pos:]...)
	in.buf, in.pos, in.mark = nil, 0, -1
	for in.err == nil {
		if len(out) == cap(out) {
			out = append(out, 0)[:len(out)]
		}
		n, err := in.r.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if err != nil {
			in.err = err
		}
	}
	if err := in.failed(); err != nil {
		return nil, err
	}
	return out, nil
}

// drain reads the body to its end, keeping nothing, and returns the read
// error that ended it, if any: a body that fails to decode is still read
// whole, as client-go reads it before decoding, so that a read error wins.
func (in *input) drain() error {
	if in.err == nil {
		_, err := io.Copy(io.Discard, in.r)
		if err != nil {
			in.err = err
		} else {
			in.err = io.EOF
		}
	}
	return in.failed()
}

// uvarint reads a protobuf varint at pos as gogo-generated code does:
// at most 10 bytes, bits past 64 dropped. ok is false (and pos unmoved)
// if it does not end within 10 bytes, within limit bytes, or before the
// body does.
func (in *input) uvarint(limit int) (v uint64, ok bool) {
	for i := 0; i < 10 && i < limit; i++ {
		if !in.ensure(i + 1) {
			return 0, false
		}
		b := in.buf[in.pos+i]
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			in.pos += i + 1
			return v, true
		}
	}
	return 0, false
}
