package watchdecode

import (
	"sync"
	"sync/atomic"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// pipeline is what the workers of a watcher with Workers >= 1 share.
// There is no other goroutine: each worker in turn cuts a frame (holding
// the reader token), decodes it, and, if the frame at the head of the
// stream is decoded and no worker is delivering, delivers the decoded
// frames at the head in order. So no goroutine the others depend on
// waits for a processor while they run (a helper goroutine woken by a
// worker would wait for the worker's time slice to end).
type pipeline struct {
	w       *watcher
	r       reader        // guarded by readTok
	pool    chunks        // the reader's buffers (the same as r.pool)
	readTok chan struct{} // holds the reader's token while no worker does
	window  chan struct{} // a token per frame cut and not yet delivered
	live    atomic.Int32  // workers not exited; the last one closes the result channel

	mu         sync.Mutex
	head, tail *job // the frames cut and not yet delivered, in stream order
	delivering bool // a worker is delivering (or has taken the stream over)
	halted     bool // a worker has taken the stream over: cut no more frames
}

// startPipeline starts the workers of w, st being the declared media
// type's decoders (nil: sniff).
func startPipeline(w *watcher, st *streams, workers int) {
	p := newPipeline(w, st, workers)
	p.live.Store(int32(workers))
	for range workers {
		go p.work()
	}
}

// newPipeline is the pipeline of workers workers, none started. At most
// 2*workers batches are cut and not yet delivered: 2*workers*maxBatch
// frames, each batch its first frame and frames already read behind it in
// the same buffer.
func newPipeline(w *watcher, st *streams, workers int) *pipeline {
	pool := newChunks(2*workers + 2)
	p := &pipeline{
		w:       w,
		r:       reader{body: w.body, d: w.d, pool: pool, initial: w.o.Held != nil},
		pool:    pool,
		readTok: make(chan struct{}, 1),
		window:  make(chan struct{}, 2*workers),
	}
	if st != nil {
		p.r.use(st)
	}
	p.readTok <- struct{}{}
	return p
}

// work is a worker goroutine.
func (p *pipeline) work() {
	defer utilruntime.HandleCrashWithLogger(p.w.o.Logger)
	defer p.exit()
	var fd *frameDecoder
	var batch []*job
	for {
		if batch = p.take(batch); batch == nil {
			return
		}
		for _, j := range batch {
			if p.isDone() {
				return // stopped, or the stream taken over: what is left is not ours
			}
			if !j.last {
				if fd == nil {
					fd = newFrameDecoder(j.st, p.w.o.LeaveOutManagedFields)
				}
				if !p.w.decodeJob(fd, j) {
					fd = nil // its streaming decoder may be left mid-frame
				}
			}
			if p.finished(j) && !p.deliver() {
				return
			}
		}
	}
}

// maxBatch is the most frames a worker cuts at once: the first as soon
// as it is whole, then those already read whole behind it in the same
// buffer. Fewer turns at the reader mean fewer goroutines woken per
// frame.
const maxBatch = 16

// take waits for room in the window and for the reader's token, cuts the
// next frame (or the last job), and up to maxBatch-1 frames already read
// behind it, and appends them to the list; the batch's last job holds its
// place in the window. batch is reused. It returns nil once the watcher is
// stopped, the reader is over, or a worker has taken the stream over (what
// it cut is then left to that worker).
func (p *pipeline) take(batch []*job) []*job {
	select {
	case p.window <- struct{}{}:
	case <-p.w.done:
		return nil
	}
	select {
	case <-p.readTok:
	case <-p.w.done:
		return nil
	}
	defer func() { p.readTok <- struct{}{} }()
	if p.r.over || p.isHalted() {
		return nil
	}
	batch = append(batch[:0], p.r.cut())
	for len(batch) < maxBatch && !batch[0].last {
		j := p.r.frame()
		if j == nil {
			break
		}
		batch = append(batch, j)
	}
	batch[len(batch)-1].holdsPlace = true
	return p.link(batch)
}

// link appends batch to the list; nil if a worker has taken the stream
// over meanwhile.
func (p *pipeline) link(batch []*job) []*job {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range batch {
		if p.tail == nil {
			p.head = j
		} else {
			p.tail.next = j
		}
		p.tail = j
	}
	if p.halted {
		return nil
	}
	return batch
}

// finished marks j decoded; true if the caller is to deliver: the head of
// the list is decoded and no worker delivers.
func (p *pipeline) finished(j *job) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	j.done = true
	if p.delivering || p.head == nil || !p.head.done {
		return false
	}
	p.delivering = true
	return true
}

// deliver sends the events of the decoded frames at the head of the list,
// in order, until the head is not decoded. At a frame a worker could not
// decode, or the reader's last job, it takes the stream over: decodes the
// rest of it with client-go's chain from there. False if the stream has
// ended or the watcher was stopped.
func (p *pipeline) deliver() bool {
	for {
		p.mu.Lock()
		j := p.head
		switch {
		case j == nil || !j.done:
			p.delivering = false
			p.mu.Unlock()
			return true
		case j.last || j.err != nil:
			p.halted = true
			p.mu.Unlock()
			p.takeOver(j)
			return false
		}
		p.head = j.next
		if p.head == nil {
			p.tail = nil
		}
		p.mu.Unlock()
		p.pool.release(j.chunk)
		if j.holdsPlace {
			<-p.window
		}
		if !p.w.send(j.ev) {
			return false
		}
	}
}

// takeOver decodes the stream from j on with client-go's chain, as the
// watcher's last act: it shuts the watcher when the stream ends.
func (p *pipeline) takeOver(j *job) {
	defer p.w.shut()
	p.w.decodeAll(j.st, &listReader{p: p, j: j, cur: j.raw})
}

// isDone says whether the watcher was stopped or a worker has taken the
// stream over: a worker then decodes nothing more of its batch.
func (p *pipeline) isDone() bool {
	select {
	case <-p.w.done:
		return true
	default:
		return p.isHalted()
	}
}

func (p *pipeline) isHalted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.halted
}

// next is the frame after j in the list, nil if none yet.
func (p *pipeline) next(j *job) *job {
	p.mu.Lock()
	defer p.mu.Unlock()
	return j.next
}

// exit is a worker's last act; the last one shuts the watcher (if the
// stream's end or Stop did not already) and closes the result channel.
func (p *pipeline) exit() {
	if p.live.Add(-1) == 0 {
		p.w.shut()
		p.w.closeResult()
	}
}
