package cache

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// defaultStallWindow is how long a watch that has shown it sends bookmarks
// may stay silent before it is treated as stalled.
const defaultStallWindow = 3 * time.Minute

// ErrWatchStalled ends a watch that went silent: for longer than the stall
// window after it had delivered a bookmark, or for that long past the
// timeout the server was asked to end it by. The Reflector then re-watches
// from the last resourceVersion.
var ErrWatchStalled = errors.New("watch stalled: no event or bookmark within the stall window")

// stallDetector notices a silent watch. Until something arms it, it never
// fires, so servers that never send bookmarks cause no false alarms. Two
// things arm it:
//
//   - A bookmark on this watch (not the initial-events-end one). From then
//     on the window runs from the last event or bookmark. kube-apiserver's
//     watch cache offers a watch every bookmark whose resourceVersion is
//     past the one the watch started at, about once a minute; having sent
//     one, it keeps sending them until the watch ends, even if nothing is
//     written any more.
//   - end, when an earlier watch showed that the server sends bookmarks:
//     the time this watch's requested timeout ends it. The window then runs
//     from that promised end. A watch that starts at the newest
//     resourceVersion of a resource nobody writes gets no bookmark at all,
//     so an earlier watch's bookmarks say nothing about this one's pace.
//
// The streamer owns it.
type stallDetector struct {
	clock  clock.Clock
	window time.Duration
	timer  clock.Timer
	// last is the latest sign of life: an event, a bookmark, or the
	// promised end of the watch, which may lie in the future.
	last time.Time
	// byBookmark: this watch has delivered a bookmark.
	byBookmark bool
}

// C fires when the detector should check for a stall; nil while disarmed.
func (d *stallDetector) C() <-chan time.Time {
	if d.timer == nil {
		return nil
	}
	return d.timer.C()
}

// expectEnd arms the detector for a watch the server should end at end.
func (d *stallDetector) expectEnd(end time.Time) {
	if d.window <= 0 || d.timer != nil {
		return
	}
	d.last = end
	d.timer = d.clock.NewTimer(end.Sub(d.clock.Now()) + d.window)
}

// activity records that the watch delivered something, and whether that
// included a bookmark other than the initial-events-end one.
func (d *stallDetector) activity(bookmark bool) {
	if d.window <= 0 {
		return
	}
	now := d.clock.Now()
	if bookmark && !d.byBookmark {
		d.byBookmark = true
		d.last = now
		if d.timer == nil {
			d.timer = d.clock.NewTimer(d.window)
		} else {
			d.timer.Reset(d.window)
		}
		return
	}
	if d.timer != nil && now.After(d.last) {
		d.last = now
	}
}

// stalled is called when C fires. It returns the error that ends the watch
// if the watch has been silent for the whole window; otherwise it re-arms
// the timer for the rest of the window and returns nil.
func (d *stallDetector) stalled() error {
	silent := d.clock.Since(d.last)
	if silent < d.window {
		d.timer.Reset(d.window - silent)
		return nil
	}
	if d.byBookmark {
		return ErrWatchStalled
	}
	return fmt.Errorf("%w: still open %v after the timeout it was requested with", ErrWatchStalled, silent)
}

func (d *stallDetector) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
}
