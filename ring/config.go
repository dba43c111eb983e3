package ring

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/shard"
)

// ErrMisconfigured wraps the errors of a Config that cannot work, and of a
// ring whose members disagree on its bucket count.
var ErrMisconfigured = errors.New("ring misconfigured")

// The defaults are client-go's leader election's.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// DefaultBuckets keeps every join and leave minimal up to 31 members
	// (buckets ≥ n·(n+1)); each member's selector stays a few dozen ranges.
	DefaultBuckets = 1024
)

// Config describes one replica's membership of a ring.
type Config struct {
	// Client reads and writes the ring's Leases. Required.
	Client coordinationv1client.LeasesGetter
	// Namespace holds the ring's Leases. Required.
	Namespace string
	// Name names the ring: the replicas of one controller share it.
	// Required; a Kubernetes label value.
	Name string
	// Identity names this replica in its Lease's holderIdentity, e.g. the
	// pod name; the Lease's own name adds a random suffix per process, so
	// a restarted pod never takes over its predecessor's Lease. Default:
	// the host name.
	Identity string
	// Key is the object field ranges are over: shard.ByUID (the default)
	// or shard.ByNamespace.
	Key shard.Key
	// LeaseDuration, RenewDeadline and RetryPeriod mean what they mean
	// for client-go's leader election: others take over a silent member's
	// buckets LeaseDuration after they last saw its Lease change; a member
	// that has not renewed for RenewDeadline stops handling; it tries every
	// RetryPeriod. Defaults 15 s, 10 s, 2 s; LeaseDuration > RenewDeadline
	// > RetryPeriod, and whole seconds for LeaseDuration.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Buckets is how many equal slices the hash space is cut into, a power
	// of two from 16 to 2048 (so that any selector a plan makes is one
	// kube-apiserver accepts); every member of a ring must use the same.
	// Default DefaultBuckets.
	Buckets int
	// Drain, if set, is called after this replica stops delivering events
	// of a range it hands over and before it records the release: return
	// once the work already queued for it is done (for example, a
	// workqueue holding none of its keys). ctx ends at the renew deadline.
	Drain func(ctx context.Context, released shard.Shard) error
	// OnHandlingChange, if set, is told each time this replica starts
	// handling buckets (opened true: the gate has opened, the adds are
	// not yet delivered) or stops (opened false: the handler calls in
	// progress have returned; when fencing, at once, from the fencing
	// goroutine). s holds the buckets concerned. It must return quickly;
	// it is for recording and metrics.
	OnHandlingChange func(opened bool, s shard.Shard)
	// Clock drives every timer; default the real clock.
	Clock clock.WithTicker
	// ReshardByRelist makes the ring's informers list their whole new
	// shard at each change instead of merging what moved into their caches
	// (cache.ReflectorOptions.ReshardByRelist): the handoff as it was before
	// merging, kept to compare the two. Off by default.
	ReshardByRelist bool
	// ReflectorOptions are the options of every ring informer's Reflector
	// (cache.ReflectorOptions.Compact for compact stores, the lean
	// options, ...); the ring sets Shard and ShardFilterLocally on them,
	// and ReshardByRelist if set above.
	ReflectorOptions cache.ReflectorOptions
}

// withDefaults returns c completed and checked.
func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Namespace == "" || c.Name == "" {
		return c, fmt.Errorf("%w: Client, Namespace and Name are required", ErrMisconfigured)
	}
	if errs := validation.IsValidLabelValue(c.Name); len(errs) > 0 {
		return c, fmt.Errorf("%w: Name %q: %s", ErrMisconfigured, c.Name, strings.Join(errs, "; "))
	}
	if c.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return c, fmt.Errorf("%w: no Identity and no host name: %w", ErrMisconfigured, err)
		}
		c.Identity = host
	}
	c.Key = defaultTo(c.Key, shard.ByUID)
	c.LeaseDuration = defaultTo(c.LeaseDuration, DefaultLeaseDuration)
	c.RenewDeadline = defaultTo(c.RenewDeadline, DefaultRenewDeadline)
	c.RetryPeriod = defaultTo(c.RetryPeriod, DefaultRetryPeriod)
	c.Buckets = defaultTo(c.Buckets, DefaultBuckets)
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, c.check()
}

func (c Config) check() error {
	switch {
	case c.Key != shard.ByUID && c.Key != shard.ByNamespace:
		return fmt.Errorf("%w: Key %q: want shard.ByUID or shard.ByNamespace", ErrMisconfigured, c.Key)
	case c.LeaseDuration%time.Second != 0:
		return fmt.Errorf("%w: LeaseDuration %v is not whole seconds, as a Lease records it", ErrMisconfigured, c.LeaseDuration)
	case c.LeaseDuration <= c.RenewDeadline || c.RenewDeadline <= c.RetryPeriod || c.RetryPeriod <= 0:
		return fmt.Errorf("%w: want LeaseDuration (%v) > RenewDeadline (%v) > RetryPeriod (%v) > 0", ErrMisconfigured, c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	case c.Buckets < 16 || c.Buckets > maxBuckets || bits.OnesCount(uint(c.Buckets)) != 1:
		return fmt.Errorf("%w: Buckets %d: want a power of two from 16 to %d", ErrMisconfigured, c.Buckets, maxBuckets)
	}
	return nil
}

func defaultTo[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// leaseName is the name of this process's Lease: ring, identity and a
// random suffix, as a DNS subdomain.
func leaseName(ring, identity string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, ring+"-"+identity)
	if len(clean) > 200 {
		clean = clean[:200]
	}
	return strings.Trim(clean, "-.") + fmt.Sprintf("-%x", b)
}
