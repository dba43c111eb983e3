package watchdecode

import "sync/atomic"

// chunkSize is the size of the reader's buffers.
const chunkSize = 64 << 10

// chunk is one of the reader's buffers. Frames are slices of it, handed
// to the workers without a copy; once every frame cut from it has been
// delivered, and the reader has moved on to another buffer, it is
// recycled. The decoders keep nothing of the bytes they decode (client-go
// reuses its buffers likewise), so a recycled buffer is not read again.
type chunk struct {
	buf  []byte
	refs atomic.Int32 // frames cut from it and not delivered, +1 while the reader's
}

// chunks recycles the reader's buffers of chunkSize. Safe for concurrent
// use: the reader takes buffers, the delivering worker releases them.
type chunks struct {
	free chan *chunk
}

func newChunks(n int) chunks { return chunks{free: make(chan *chunk, n)} }

// get is a buffer of at least size bytes, empty, held by the caller.
func (cs chunks) get(size int) *chunk {
	var c *chunk
	if size <= chunkSize {
		select {
		case c = <-cs.free:
		default:
		}
	}
	if c == nil {
		c = &chunk{buf: make([]byte, 0, max(size, chunkSize))}
	}
	c.buf = c.buf[:0]
	c.refs.Store(1)
	return c
}

// release drops one reference to c (a frame delivered, or the reader
// moving on); the last one recycles it, if it is of chunkSize and the
// free list has room.
func (cs chunks) release(c *chunk) {
	if c.refs.Add(-1) != 0 || cap(c.buf) != chunkSize {
		return
	}
	select {
	case cs.free <- c:
	default:
	}
}
