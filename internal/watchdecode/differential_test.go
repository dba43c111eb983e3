package watchdecode

import (
	"fmt"
	"testing"
)

// TestSameEventsAsClientGo: a realistic stream, JSON and protobuf, read
// whole, a byte at a time and in random chunks, gives client-go's events
// at every worker count.
func TestSameEventsAsClientGo(t *testing.T) {
	for _, media := range medias {
		body := encode(t, media, script(40))
		want := drain(clientGo(t, typedSerializer, media, newReads(body, 1<<30, nil)))
		if len(want) != len(script(40)) {
			t.Fatalf("%s: client-go decoded %d events of %d", media, len(want), len(script(40)))
		}
		for _, rd := range readers {
			for _, workers := range workerCounts {
				t.Run(fmt.Sprintf("%s/%s/workers=%d", media, rd.name, workers), func(t *testing.T) {
					w := New(newReads(body, rd.n, nil), typed, Options{Workers: workers})
					sameEvents(t, drain(w), want)
				})
			}
		}
	}
}

// TestLongStream: a stream of many buffers' worth, so that buffers are
// recycled while frames are decoded (the race detector watches the
// rest), gives client-go's events.
func TestLongStream(t *testing.T) {
	for _, media := range medias {
		body := pods(t, media, 300)
		want := drain(clientGo(t, typedSerializer, media, newReads(body, 1<<30, nil)))
		for _, n := range []int{1 << 30, 5000, -3} {
			for _, workers := range []int{1, 2, 8} {
				sameEvents(t, drain(New(newReads(body, n, nil), typed, Options{Workers: workers})), want)
			}
		}
	}
}
