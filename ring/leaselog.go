package ring

import (
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// logEvery is how often, at most, a failure of the rounds that goes on is
// logged again.
const logEvery = time.Minute

// roundLog logs the failures of a replica's rounds (writing its Lease,
// reading the ring) at error level, as client-go's leader election logs
// failing to acquire or renew its lease, without a line every
// RetryPeriod: the first failure, then at most one line every logEvery
// while failures go on (each with how many rounds failed and for how
// long), and one line at info level when a round succeeds again. Only
// the loop uses it.
type roundLog struct {
	logger klog.Logger
	clock  clock.PassiveClock
	// since is when the failures began, zero while rounds succeed; logged
	// when the last error line was written; failures counts the rounds
	// failed since.
	since, logged time.Time
	failures      int
}

// failed notes a failed round and logs err if it is the first of a run
// of failures or the last line is logEvery old.
func (l *roundLog) failed(err error) {
	now := l.clock.Now()
	l.failures++
	if l.since.IsZero() {
		l.since = now
	} else if now.Sub(l.logged) < logEvery {
		return
	}
	l.logged = now
	l.logger.Error(err, "Ring member cannot renew its Lease or read the ring; it retries every RetryPeriod",
		"failures", l.failures, "failingFor", now.Sub(l.since).Round(time.Millisecond))
}

// succeeded notes a round that wrote and read, and says so once after
// failures.
func (l *roundLog) succeeded() {
	if l.since.IsZero() {
		return
	}
	l.logger.Info("Ring member renews its Lease and reads the ring again",
		"failures", l.failures, "failedFor", l.clock.Since(l.since).Round(time.Millisecond))
	l.since, l.logged, l.failures = time.Time{}, time.Time{}, 0
}
