package watchdecode

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// TestATurnCutsTheFramesAlreadyRead: a worker's turn at the reader cuts
// the first frame, reading for it, then every whole frame already read
// behind it, up to maxBatch, but reads no more for them; the frames are
// linked in stream order.
func TestATurnCutsTheFramesAlreadyRead(t *testing.T) {
	var small []watch.Event
	for i := range 3 * maxBatch {
		small = append(small, watch.Event{Type: watch.Added, Object: configMap(fmt.Sprint("cm-", i), i)})
	}
	for _, media := range medias {
		body := encode(t, media, small)
		w := &watcher{body: io.NopCloser(bytes.NewReader(body)), d: typed, done: make(chan struct{})}
		st, err := typed.forMedia(media)
		if err != nil {
			t.Fatal(err)
		}
		p := newPipeline(w, st, 2)
		batch := p.take(nil)
		if len(batch) != maxBatch {
			t.Fatalf("%s: a turn cut %d frames of a body read whole, want %d", media, len(batch), maxBatch)
		}
		for i, j := range batch {
			if j.last || (i > 0 && batch[i-1].next != j) {
				t.Fatalf("%s: frame %d is not linked after the one before it", media, i)
			}
		}
		if p.head != batch[0] || p.tail != batch[len(batch)-1] {
			t.Fatalf("%s: the batch is not the list", media)
		}
		if got := len(p.window); got != 1 {
			t.Fatalf("%s: %d places taken in the window, want one for the batch", media, got)
		}
		for i, j := range batch {
			if j.holdsPlace != (i == len(batch)-1) {
				t.Fatalf("%s: frame %d holds the batch's place: %v", media, i, j.holdsPlace)
			}
		}
	}
}

// TestATurnDoesNotWaitForMoreFrames: with one frame read so far, a turn
// cuts it alone, at once.
func TestATurnDoesNotWaitForMoreFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		one := pods(t, mediaProtobuf, 1)
		pr, pw := io.Pipe()
		go pw.Write(one) // the rest never comes
		w := &watcher{body: pr, d: typed, done: make(chan struct{})}
		st, _ := typed.forMedia(mediaProtobuf)
		p := newPipeline(w, st, 2)
		if batch := p.take(nil); len(batch) != 1 || batch[0].last {
			t.Fatalf("a turn cut %d frames, want the one whole frame", len(batch))
		}
		pw.Close()
	})
}

// TestStopDropsBufferedEvents: events delivered to the result channel's
// buffer but not received are dropped by Stop, as an unbuffered channel's
// undelivered events are: a consumer draining after Stop gets none.
func TestStopDropsBufferedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New(io.NopCloser(bytes.NewReader(pods(t, mediaProtobuf, 4))), typed, Options{Workers: 2})
		synctest.Wait()
		if n := len(w.ResultChan()); n == 0 {
			t.Fatal("nothing buffered before Stop: the test does not test")
		}
		w.Stop()
		var left []watch.Event
		for ev := range w.ResultChan() {
			left = append(left, ev)
		}
		if len(left) != 0 {
			t.Fatalf("%d events received after Stop", len(left))
		}
	})
}

// TestBufferedEventsSurviveTheEnd: at the stream's end (no Stop), every
// buffered event is still received before the channel closes.
func TestBufferedEventsSurviveTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New(io.NopCloser(bytes.NewReader(pods(t, mediaProtobuf, 4))), typed, Options{Workers: 2})
		synctest.Wait()
		if got := len(drain(w)); got != 4 {
			t.Fatalf("%d events, want 4", got)
		}
	})
}

// TestStopEndsABatch: a worker stopped in the middle of its batch, with
// the head of the stream another worker's, decodes none of the rest of
// it, so Stop does not wait for frames nobody will receive. The body
// arrives in two reads, so each worker cuts one: frames 0-3, then 4-15;
// Item holds frame 0 (the head) and frame 5.
func TestStopEndsABatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var first, rest []watch.Event
		for i := range maxBatch {
			ev := watch.Event{Type: watch.Added, Object: configMap(fmt.Sprint("cm-", i), i)}
			if i < 4 {
				first = append(first, ev)
			} else {
				rest = append(rest, ev)
			}
		}
		body := &partReader{parts: [][]byte{encode(t, mediaProtobuf, first), encode(t, mediaProtobuf, rest)}}
		release := make(chan struct{})
		var mu sync.Mutex
		var after []string
		item := func(obj runtime.Object) {
			name := obj.(*corev1.ConfigMap).Name
			if name == "cm-0" || name == "cm-5" {
				<-release
				return
			}
			select {
			case <-release:
				mu.Lock()
				after = append(after, name)
				mu.Unlock()
			default:
			}
		}
		w := New(body, typed, Options{Workers: 2, MediaType: mediaProtobuf, Item: item})
		synctest.Wait() // one worker is in Item for cm-0, the other for cm-5
		stopped := make(chan struct{})
		go func() { w.Stop(); close(stopped) }()
		synctest.Wait()
		close(release)
		<-stopped
		if len(after) != 0 {
			t.Fatalf("frames decoded after Stop: %v", after)
		}
	})
}

// partReader returns one part per Read (p is large enough), then EOF
// once Close is called; until then it blocks, as a connection does.
type partReader struct {
	parts  [][]byte
	closed chan struct{}
	once   sync.Once
}

func (r *partReader) init() { r.once.Do(func() { r.closed = make(chan struct{}) }) }

func (r *partReader) Read(p []byte) (int, error) {
	r.init()
	if len(r.parts) > 0 {
		n := copy(p, r.parts[0])
		r.parts = r.parts[1:]
		return n, nil
	}
	<-r.closed
	return 0, io.EOF
}

func (r *partReader) Close() error {
	r.init()
	select {
	case <-r.closed:
	default:
		close(r.closed)
	}
	return nil
}
