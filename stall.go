package cache

import (
	"errors"
	"time"

	"k8s.io/utils/clock"
)

// defaultStallWindow is how long a watch that has shown it sends bookmarks
// may stay silent before it is treated as stalled.
const defaultStallWindow = 3 * time.Minute

// ErrWatchStalled ends a watch that went silent for longer than the stall
// window after it had delivered at least one bookmark. The Reflector then
// re-watches from the last resourceVersion.
var ErrWatchStalled = errors.New("watch stalled: no event or bookmark within the stall window")

// stallDetector notices a silent watch. It is armed by the first bookmark
// the server sends (on this watch, or on an earlier one, in which case it
// is armed when the watch opens): only then is the server known to send
// bookmarks periodically, so servers that never send them cause no false
// alarms. The streamer owns it.
type stallDetector struct {
	clock  clock.Clock
	window time.Duration
	timer  clock.Timer
	last   time.Time
}

// C fires when the detector should check for a stall; nil while disarmed.
func (d *stallDetector) C() <-chan time.Time {
	if d.timer == nil {
		return nil
	}
	return d.timer.C()
}

// activity records that the watch delivered something; a bookmark arms it.
func (d *stallDetector) activity(bookmark bool) {
	if d.window <= 0 || (d.timer == nil && !bookmark) {
		return
	}
	d.last = d.clock.Now()
	if d.timer == nil {
		d.timer = d.clock.NewTimer(d.window)
	}
}

// stalled is called when C fires: true if the watch has been silent for the
// whole window, otherwise the timer is re-armed for the rest of it.
func (d *stallDetector) stalled() bool {
	silent := d.clock.Since(d.last)
	if silent >= d.window {
		return true
	}
	d.timer.Reset(d.window - silent)
	return false
}

func (d *stallDetector) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
}
