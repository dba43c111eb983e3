package watchdecode

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kreflector/cache/internal/podgen"
)

// frames is body cut after each of its frames.
func frames(t *testing.T, media string, body []byte) [][]byte {
	var out [][]byte
	var split splitter = &jsonFrames{}
	if media == mediaProtobuf {
		split = lengthFrames{}
	}
	for len(body) > 0 {
		c := split.next(body, 0)
		if c.end == 0 {
			out[len(out)-1] = append(out[len(out)-1], body...) // trailing whitespace
			break
		}
		out = append(out, body[:c.end])
		body = body[c.end:]
	}
	return out
}

// pods is a body of n ADDED Pods.
func pods(t testing.TB, media string, n int) []byte {
	evs := make([]watch.Event, n)
	for i := range evs {
		evs[i] = watch.Event{Type: watch.Added, Object: podgen.Pod(i, 100+i)}
	}
	return encode(t, media, evs)
}

// TestLoneEventDelivered: each event is delivered before the next one is
// written (a watcher waiting for more would deadlock the bubble).
func TestLoneEventDelivered(t *testing.T) {
	for _, media := range medias {
		body := encode(t, media, script(5))
		want := drain(clientGo(t, typedSerializer, media, newReads(body, 1<<30, nil)))
		for _, workers := range workerCounts {
			t.Run(fmt.Sprintf("%s/workers=%d", media, workers), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					pr, pw := io.Pipe()
					w := New(pr, typed, Options{Workers: workers})
					for i, f := range frames(t, media, body) {
						if _, err := pw.Write(f); err != nil {
							t.Fatal(err)
						}
						sameEvents(t, []watch.Event{<-w.ResultChan()}, want[i:i+1])
					}
					pw.Close()
					if ev, ok := <-w.ResultChan(); ok {
						t.Fatalf("after the end: %s", describe(ev))
					}
				})
			})
		}
	}
}

// burst is a pipe a goroutine writes body into over and over, until the
// reader is closed.
func burst(body []byte) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		for {
			if _, err := pw.Write(body); err != nil {
				return
			}
		}
	}()
	return pr
}

// TestStopDuringBurst: Stop while frames pour in closes the result
// channel and leaves no goroutine (the bubble would not end).
func TestStopDuringBurst(t *testing.T) {
	for _, media := range medias {
		body := pods(t, media, 50)
		for _, workers := range workerCounts {
			t.Run(fmt.Sprintf("%s/workers=%d", media, workers), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := New(burst(body), typed, Options{Workers: workers})
					for range 120 {
						if ev := <-w.ResultChan(); ev.Type != watch.Added {
							t.Fatalf("got %s", describe(ev))
						}
					}
					w.Stop()
					if _, ok := <-w.ResultChan(); ok {
						t.Fatal("result channel open after Stop")
					}
					w.Stop()
				})
			})
		}
	}
}

// TestStopUnreceived: Stop with events decoded and not received, and
// with the reader blocked on an idle body, returns.
func TestStopUnreceived(t *testing.T) {
	for _, media := range medias {
		body := pods(t, media, 50)
		for _, workers := range workerCounts {
			synctest.Test(t, func(t *testing.T) {
				w := New(burst(body), typed, Options{Workers: workers})
				synctest.Wait()
				w.Stop()
			})
			synctest.Test(t, func(t *testing.T) {
				pr, _ := io.Pipe()
				w := New(pr, typed, Options{Workers: workers})
				synctest.Wait()
				w.Stop()
				if _, ok := <-w.ResultChan(); ok {
					t.Fatal("an event from an idle body")
				}
			})
		}
	}
}

// TestConcurrentStop: Stop from several goroutines while events are
// received (the race detector checks the rest).
func TestConcurrentStop(t *testing.T) {
	body := pods(t, mediaProtobuf, 50)
	for _, workers := range workerCounts {
		synctest.Test(t, func(t *testing.T) {
			w := New(burst(body), typed, Options{Workers: workers})
			var wg sync.WaitGroup
			received := make(chan struct{})
			wg.Go(func() {
				for range w.ResultChan() {
					select {
					case received <- struct{}{}:
					default:
					}
				}
			})
			<-received
			for range 3 {
				wg.Go(w.Stop)
			}
			wg.Wait()
		})
	}
}

// TestBackpressure: a consumer that does not receive holds the reader
// back: it reads no more than the frames the window holds, the events the
// result channel holds, and one buffer.
func TestBackpressure(t *testing.T) {
	for _, media := range medias {
		body := pods(t, media, 500)
		frame := len(body) / 500
		for _, workers := range workerCounts {
			synctest.Test(t, func(t *testing.T) {
				r := &counting{r: burst(body)}
				w := New(r, typed, Options{Workers: workers})
				synctest.Wait()
				if limit := int64((2*workers*maxBatch+resultBuffer(workers)+2)*frame + chunkSize + 512); r.n.Load() > limit {
					t.Errorf("%s, %d workers: read %d bytes before the first event was received, want <= %d", media, workers, r.n.Load(), limit)
				}
				w.Stop()
			})
		}
	}
}

type counting struct {
	r io.ReadCloser
	n atomic.Int64
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *counting) Close() error { return c.r.Close() }

// TestItem: Item runs on each decoded object before its event is
// delivered, on several goroutines at once.
func TestItem(t *testing.T) {
	for _, media := range medias {
		body := encode(t, media, script(40))
		for _, workers := range workerCounts {
			var calls atomic.Int64
			item := func(obj runtime.Object) {
				calls.Add(1)
				if p, ok := obj.(*corev1.Pod); ok {
					p.Spec.NodeName = "seen"
				}
			}
			evs := drain(New(newReads(body, -3, nil), typed, Options{Workers: workers, Item: item}))
			if int(calls.Load()) != len(evs) {
				t.Errorf("%s, %d workers: Item called %d times for %d events", media, workers, calls.Load(), len(evs))
			}
			for _, ev := range evs {
				if p, ok := ev.Object.(*corev1.Pod); ok && p.Spec.NodeName != "seen" {
					t.Fatalf("%s, %d workers: a Pod delivered before Item ran on it", media, workers)
				}
			}
		}
	}
}

// TestPanickingItem: with utilruntime.ReallyCrash off (HandleCrash then
// logs a panic and carries on, as client-go's receive goroutine does), a
// panic in Item ends the stream after the events before it, and every
// goroutine exits.
func TestPanickingItem(t *testing.T) {
	defer func(was bool) { utilruntime.ReallyCrash = was }(utilruntime.ReallyCrash)
	utilruntime.ReallyCrash = false
	body := pods(t, mediaProtobuf, 20)
	for _, workers := range workerCounts {
		synctest.Test(t, func(t *testing.T) {
			item := func(obj runtime.Object) {
				if obj.(*corev1.Pod).ResourceVersion == "105" {
					panic("item")
				}
			}
			evs := drain(New(newReads(body, 100, nil), typed, Options{Workers: workers, Item: item}))
			if len(evs) != 5 {
				t.Errorf("%d workers: %d events before the panic, want 5", workers, len(evs))
			}
		})
	}
}
