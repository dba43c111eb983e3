package cache

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ReflectorOptions configures a Reflector. The zero value gives client-go's
// defaults.
type ReflectorOptions struct {
	// Logger is where the Reflector logs when the context it runs with
	// carries no logger (one put there with klog.NewContext or
	// logr.NewContext wins); nil means klog.Background(). The reflector's
	// name is added to it.
	Logger *klog.Logger
	// Name identifies the reflector in logs and labels its metrics;
	// defaults to the caller's file:line (the first caller outside this
	// package and the Go runtime). An informer's Reflector is named after
	// the informer (see ReflectorConfigurable).
	Name string
	// TypeDescription describes the stored type in logs; defaults to the
	// expected type's Go type, or the GVK of an Unstructured expected type.
	TypeDescription string
	// ResyncPeriod, if positive, calls the store's Resync that often while
	// watching (subject to Reflector.ShouldResync).
	ResyncPeriod time.Duration
	// MinWatchTimeout raises the lower bound of watch timeouts above the
	// five-minute floor; smaller values are ignored.
	MinWatchTimeout time.Duration
	// Clock is the clock client-go's Reflector puts its timers on, and ours
	// puts the same ones there, no others: the backoff between attempts to
	// open a watch or WatchList within a cycle, and the resync period; it
	// also times the very-short-watch rule, the internal-error retry window
	// and the backoff's reset, and Stats' times are read from it (Stats
	// arms no timer). As in client-go, Run waits between cycles on
	// the real clock. What client-go's Reflector does not have runs on the
	// real clock too: health and its grace periods (Health.Since
	// included), stall detection and LIST page retries; drive those in
	// tests with testing/synctest. So a test that steps a fake clock
	// whenever it has a timer pending drives ours as it drives client-go's.
	// Defaults to the real clock.
	Clock clock.Clock
	// Backoff replaces the default exponential backoff (0.8 s doubling to
	// 30 s, jitter 1.0). Either is reset after two minutes without a
	// failure, and as soon as the server serves the Reflector again (a
	// sync completes, a watch delivers events or stays open the health
	// grace period, or the server says the resourceVersion to resume from
	// is gone), except in a loop of relists whose watches fail at once.
	// Setting Backoff (or Clock) also makes re-watches after internal
	// errors immediate, as in client-go (see
	// Reflector.MaxInternalErrorRetryDuration). A delay that is not
	// positive arms no timer.
	Backoff *wait.Backoff

	// UseWatchList selects WatchList streaming for the initial state: true
	// uses it (falling back to LIST when the server refuses), false always
	// LISTs, and nil follows client-go's WatchListClient feature gate, as
	// client-go's Reflector does (on by default; KUBE_FEATURE_WatchListClient=false
	// or features.ReplaceFeatureGates turns it off). A ListerWatcher
	// reporting IsWatchListSemanticsUnSupported (client-go's fake
	// clientsets) always LISTs.
	UseWatchList *bool
	// WatchErrorHandler replaces DefaultWatchErrorHandler.
	WatchErrorHandler WatchErrorHandlerWithContext
	// StaleRVThreshold is how many watches in a row may fail at the same
	// resourceVersion (expired, too large, or closed within a second with no
	// event) before the Reflector relists with a consistent read (RV "")
	// instead of retrying that RV. Zero means 3; negative turns the breaker
	// off, as in client-go.
	StaleRVThreshold int
	// WatchListRefusalMemory is how long the Reflector keeps using LIST
	// after a server definitively refused a WatchList request (400, 405,
	// 406, 422, 501). Zero means for the Reflector's life; negative asks
	// again every cycle, as client-go does.
	WatchListRefusalMemory time.Duration
	// StallWindow: once a watch has delivered a bookmark, silence (no event
	// and no bookmark) for this long ends it as stalled and the Reflector
	// re-watches from the last resourceVersion. Once any watch has
	// delivered a bookmark, a watch that delivers none is also ended as
	// stalled if it stays open and silent this long past the timeout it was
	// requested with (the server should have closed it). Zero means 3
	// minutes; negative turns detection off.
	StallWindow time.Duration
	// HealthGrace is how long the Reflector may be out of touch with the
	// server (a call failed, a watch ended badly or came back empty, a
	// watch request is still in flight) before Health turns Degraded, also
	// while a LIST or WatchList call is still in flight; see Health for
	// the whole contract. Zero means 10 s: long enough for a re-watch or
	// relist through the first few backoff delays on a healthy server,
	// short against the outages that leave a store behind (a black-holed
	// connection is noticed about 45 s in, and the relist may then sit
	// 20-100 s in one call). Negative reports a loss at once.
	HealthGrace time.Duration
	// QuietCheckAfter, if positive, checks the connection of a watch that
	// has been silent this long: the Reflector sends a LIST of at most one
	// object at the latest resourceVersion ("": kube-apiserver 1.37
	// answers it with one object whatever the number of objects) through
	// its ListerWatcher, so over the same HTTP/2 connection as the watch. An answer, even an
	// error status, shows the connection works; none within
	// QuietCheckTimeout is taken for a connection that died silently, and
	// the loss of touch is dated from the watch's last sign of life, so
	// Health is Degraded (ReasonWatchFailing, an error wrapping
	// ErrQuietCheckFailed) as soon as that is HealthGrace old. The watch
	// stays open, and data arriving on it ends the loss. For programs that
	// cannot tighten the HTTP/2 health check (see Health), which
	// otherwise bounds how soon a black-holed connection is noticed
	// (about 45 s at client-go's defaults). It costs one small request per
	// quiet watch every QuietCheckAfter of silence. Zero (the default)
	// turns it off.
	QuietCheckAfter time.Duration
	// QuietCheckTimeout bounds a quiet check; zero means 5 s.
	QuietCheckTimeout time.Duration
	// OnHealthChange, if set, is called with the new Health each time the
	// Reflector's state or reason changes, or its LastError while Degraded
	// (a repeated failure whose error reads the same is no change). A
	// failure's error noted as LastError before the grace period has made
	// it Degraded (see Health.LastError) is no change either. It runs on
	// the Reflector's goroutine and must return quickly.
	OnHealthChange func(Health)
	// Rand supplies the randomness for watch timeouts and backoff jitter;
	// defaults to a generator seeded once per Reflector. It is only used
	// from the Reflector's loop goroutine.
	Rand *rand.Rand
	// ListPageRetries is how many times in a row a page after the first of
	// a paginated LIST is asked for again, from its continue token, when it
	// fails with a transient error (connection refused or reset, 429, 5xx,
	// timeout), waiting with the Reflector's backoff (and at least as long
	// as a Retry-After) in between. Zero means 6; negative turns retries
	// off, as in client-go, where such a failure starts the LIST over.
	ListPageRetries int
	// Metrics, if set, receives the Reflector's metrics while it runs (see
	// ReflectorMetricsProvider); Stats works without it.
	Metrics ReflectorMetricsProvider

	// Shard, if set, makes the Reflector a sharded one: it caches only the
	// objects whose key hashes into the shard, sending Shard.String() as
	// the ShardSelector of every LIST, WATCH and WatchList so that
	// kube-apiserver (1.36+, feature gate ShardedListAndWatch) filters on
	// the server. It verifies that the server did: every LIST page must
	// echo the selector in ListMeta.ShardInfo, and every LIST item, and
	// each watch stream's objects until the stream has shown it applies
	// the selector, must hash into the shard. Otherwise no such data
	// reaches the store: the cycle fails with an error wrapping
	// ErrShardIgnored, Health is Degraded (ReasonShardIgnored), and the
	// Reflector keeps retrying with backoff, so a server reconfigured
	// later is picked up. A ListerWatcher must not set a ShardSelector of
	// its own (the echo shows it, and that is the same error). The shard
	// can be changed while the Reflector runs (SetShard). nil: unsharded.
	Shard *Shard
	// ShardFilterLocally, with Shard, accepts a server that ignores the
	// selector: objects outside the shard are dropped before the store
	// (counted in Stats.ShardDropped), so each object is still handled by
	// one replica, at the full network and decode cost of an unsharded
	// Reflector. A server that applies the selector is still used as such.
	ShardFilterLocally bool
	// ReshardByRelist makes SetShard list the whole new shard again
	// instead of merging it into the store (see Reflector.SetShard): the
	// behaviour before merging, kept to compare the two. Counted as a
	// fallback (FallbackAsked).
	ReshardByRelist bool

	// ReuseHeldObjects: nil or true (the default) lets a relist (every
	// LIST or WatchList sync after the Reflector's first) keep, for each
	// listed object whose key and non-empty resourceVersion equal those
	// of the object the store already holds, the held object instead of
	// the newly decoded copy: by the API's resourceVersion contract both
	// have the same content. The copy becomes garbage with its LIST page
	// (or WatchList event) instead of living until the store's Replace,
	// so a relist that changes little no longer holds the cache twice.
	// The store's Replace, and a store's consumers (an informer's
	// handlers), are then given the held object itself. For an
	// informer relisting through this module's own ListWatch (its
	// factories'), in protobuf or in JSON (typed objects whose ObjectMeta
	// is their "metadata", custom resources' types included, and the
	// dynamic informers' unstructured ones), such an item is not even
	// decoded; so too, relisting by WatchList, an initial event's object
	// (in JSON where the event is written as kube-apiserver writes it):
	// its namespace, name and resourceVersion are read from its bytes
	// first (counted in Stats.ItemsNotDecoded). A sharded Reflector does
	// so for held objects in its shard (by UID, not for a held object
	// without a UID). A compact store's record that an index function
	// failed on is never kept: its index values were computed when it
	// was packed, so the listed copy is packed and indexed again. A
	// listed object
	// at another resourceVersion than the held one takes, in place, the
	// held one's copy of each string equal at the same place, and unless
	// the store transforms, of each equal byte slice and
	// map[string]string (labels, annotations, a ConfigMap's data): values
	// are unchanged byte for byte, and what did not change is held once
	// instead of twice (maps and interfaces are not entered, so
	// unstructured objects adopt nothing). It applies to
	// stores that can say what they hold (a Get method): this package's
	// and client-go's stores and indexers, and this package's informers;
	// not to queues (DeltaFIFO, RealFIFO, whose Get returns deltas), nor
	// to a store that transforms what its Replace is given (a
	// TransformingStore with a transform, client-go's store built with
	// WithTransformer), which would transform a held object again while
	// others read it. A store of another Go type than the listed objects
	// is never reused from. Set false for a store of your own that
	// transforms in Replace, or whose objects are changed after they are
	// stored, or when the ListerWatcher's objects are read by others
	// while it lists (no client's are). false keeps every listed copy
	// as it was decoded, as client-go does.
	ReuseHeldObjects *bool

	// ShareStrings makes the objects the store gets share equal strings
	// and byte slices with each other: every non-empty string and []byte
	// reachable through an object's exported fields, pointers, slices,
	// maps (keys included) and interfaces, and every string, map key and
	// number of an unstructured object, is replaced by one canonical copy
	// of its value. Values are unchanged, byte for byte; label keys and
	// values, images, node names, owner references and managedFields'
	// field sets are then held once for the objects that have them,
	// instead of once per object. It is done to each LIST page as it
	// arrives, to each WatchList initial event and to each ADDED and
	// MODIFIED watch event, so the peak of a sync falls too (a DELETED
	// event's object leaves the cache, so it is not shared). Canonical copies are kept in a
	// table of this Reflector's own, in two generations that each span at
	// least as many objects as the latest sync listed: a value no object
	// walked in the last two generations had is forgotten, so the table
	// follows the size of the cache, not the history of churn through it.
	// Objects are changed in place: the
	// ListerWatcher must hand this Reflector objects no one else reads
	// (any client decoding responses does). Byte slices become shared
	// memory: writing into one would change other objects (cached objects
	// must never be written to). Costs CPU per object (a walk of its
	// fields, one table lookup per value).
	ShareStrings bool
	// ShareMaps makes the typed objects the store gets share equal maps
	// whole: a map whose keys are strings and whose values are strings
	// (labels, annotations, selectors) or resource quantities (resource
	// lists) is replaced by an equal map the Reflector already holds, if
	// it holds one, so objects made from one template (a ReplicaSet's
	// Pods) hold their maps once. A small Go map costs far more than its
	// strings (a Pod's labels about 300 bytes, each container's resource
	// list about 650), so this saves more than ShareStrings does on Pods.
	// Equal means the same keys with values equal byte for byte, or for
	// quantities of one format, equal in value (they encode to the same
	// canonical string). Maps are kept in the table ShareStrings uses, with
	// its bound. Not done when the store transforms the objects it is
	// given (an informer's SetTransform, a TransformingStore, client-go's
	// store or queue built with a transformer): a transform that changes a
	// map in place would change it for every object sharing it. A shared
	// map is shared memory: writing into it (a handler adding a label to
	// a cached object without copying it first, which is already a bug)
	// changes other objects. Unstructured content is not affected.
	// Independent of ShareStrings; the two are meant to be used together.
	ShareMaps bool
	// DropManagedFields removes metadata.managedFields from the objects
	// the store gets (LIST pages as they arrive, WatchList initial events,
	// watch events), typed or unstructured. Most programs never read them,
	// and they are often a fifth of an object's memory. The ListWatches
	// of this module mostly do not even decode them from protobuf (a
	// ListerWatcher wrapping one mostly sees objects without them; the
	// Reflector tells them so through the context of its calls, which a
	// wrapper should not reuse for calls of its own); other
	// ListerWatchers' objects lose them after decoding.
	//
	// Order: for the objects of a sync, an object reused under
	// ReuseHeldObjects gets nothing more; others have their managedFields
	// dropped, then adopt their held version's values (ReuseHeldObjects;
	// not under ShareStrings), then have their strings and maps shared,
	// and then reach the store, whose
	// own transform (an informer's SetTransform, a TransformingStore's)
	// runs last, where the store runs it: client-go's queues and stores
	// at Replace for a LIST, as each object arrives for a WatchList, at
	// each event for a watch.
	DropManagedFields bool

	// Compact, for an informer of this package, holds its store's objects
	// encoded and compressed instead of decoded (see CompactOptions for
	// what reads cost and return): a realistic Pod takes about a tenth of
	// the heap. Objects are packed where they enter: each LIST page as it
	// arrives (after the informer's transform, which then runs there),
	// each WatchList initial event and watch event in the informer's
	// queue, so that a sync never holds the decoded cache; a relist keeps
	// the records of objects whose resourceVersion did not change (unless
	// ReuseHeldObjects is false). Handlers get decoded objects, decoded at
	// delivery when the read cache has not got them: a slow handler's
	// backlog holds records, not objects. The lean options apply to what
	// is encoded (DropManagedFields shrinks every record) and to what the
	// read cache holds. A plain Reflector ignores it: give it a store made
	// by NewCompactIndexer instead. nil: objects are held decoded.
	Compact *CompactOptions
}

// logger is the Logger option or klog's default.
func (o ReflectorOptions) logger() klog.Logger {
	if o.Logger == nil {
		return klog.Background()
	}
	return *o.Logger
}

// backoff is the Backoff option or the default backoff.
func (o ReflectorOptions) backoff() wait.Backoff {
	if o.Backoff == nil {
		return defaultBackoff()
	}
	return *o.Backoff
}

// withDefaults returns o with every unset option that is not a pointer set
// to its default (pointer options are read by logger, backoff and
// NewReflectorWithOptions, so that defaults cost no allocation).
func (o ReflectorOptions) withDefaults(expectedType interface{}) ReflectorOptions {
	if o.Name == "" {
		o.Name = callerName()
	}
	if o.TypeDescription == "" {
		o.TypeDescription = describeType(expectedType)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if o.WatchErrorHandler == nil {
		o.WatchErrorHandler = DefaultWatchErrorHandler
	}
	o.StaleRVThreshold = cmp.Or(o.StaleRVThreshold, defaultStaleRVThreshold)
	o.StallWindow = cmp.Or(o.StallWindow, defaultStallWindow)
	o.ListPageRetries = cmp.Or(o.ListPageRetries, defaultPageRetries)
	o.HealthGrace = cmp.Or(o.HealthGrace, defaultHealthGrace)
	o.QuietCheckTimeout = cmp.Or(o.QuietCheckTimeout, defaultQuietCheckTimeout)
	return o
}

func describeType(expectedType interface{}) string {
	if expectedType == nil {
		return defaultExpectedTypeName
	}
	if gvk := expectedGVKOf(expectedType); gvk != nil {
		return gvk.String()
	}
	return reflect.TypeOf(expectedType).String()
}

func expectedGVKOf(expectedType interface{}) *schema.GroupVersionKind {
	u, ok := expectedType.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	gvk := u.GroupVersionKind()
	if gvk.Empty() {
		return nil
	}
	return &gvk
}

// watchList is whether the Reflector starts with WatchList: UseWatchList
// if set, else client-go's WatchListClient gate, read at construction as
// client-go's Reflector reads it.
func (o ReflectorOptions) watchList() bool {
	if o.UseWatchList != nil {
		return *o.UseWatchList
	}
	return clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
}
