// Package ring makes sharded informers elastic: replicas of a controller
// find each other through coordination.k8s.io/v1 Leases, split the hash
// space of kube-apiserver's server-side sharding among the live ones, and
// hand ranges over so that an object is never handled by two replicas at
// the same instant and never left without one for longer than the bounds
// below.
//
//	r, err := ring.New(ring.Config{Client: cs.CoordinationV1(), Namespace: "kube-system", Name: "my-controller", Identity: podName})
//	inf := r.NewInformer(lw, &corev1.Pod{}, 0, cache.Indexers{}) // or crcache.Options{NewInformer: r.NewInformer}
//	go r.Run(ctx) // controller-runtime: AddRing(mgr, r) of github.com/kreflector/cache/integration/controllerruntime
//
// # Membership
//
// Each replica holds a Lease of its own, labelled with the ring's name and
// renewed as client-go's leader election renews (LeaseDuration 15 s,
// RenewDeadline 10 s, RetryPeriod 2 s by default). Every RetryPeriod a
// replica writes its Lease and lists the ring's Leases (a consistent
// read). A Lease is live until it has not changed for its duration, as
// seen on the reader's own clock; a replica that has not renewed for
// RenewDeadline stops handling (fencing) before anyone can see its Lease
// expire. This assumes only that clocks run at about the same rate (they
// may differ by up to (LeaseDuration-RenewDeadline)/LeaseDuration, a
// third by default): no two machines' times are ever compared.
// A member counts only once ready: its informers hold the share it would
// have, so a replica that cannot cache never takes buckets.
//
// # A lost Lease
//
// A replica's Lease can go from under it: the others delete it once it
// has expired for twice its duration (the replica was paused or cut off
// that long), or someone deletes, replaces or edits it. The replica finds
// out at its next write (refused with 404, or with 409 Conflict when the
// uid or resourceVersion it carries no longer matches, which is how
// kube-apiserver refuses an update of a deleted Lease) or its next read
// (its Lease missing from the list or at another version); a write of its
// own that was applied but whose response was lost is recognized as such
// and is no loss. Whenever the Lease on the server is not the one it last
// wrote, the replica stops handling at once, as fencing does, forgets what
// it held and was releasing (never to publish them again: the others may
// own them by now), and rejoins holding nothing: it creates its Lease
// again, or writes over the object now bearing its name, saying which
// Lease it supersedes (AnnotationSupersedes), then takes a share as a
// newcomer does, through the others' releases. Status.Rejoins counts this,
// Status.Rejoining and Status.LastError (wrapping ErrLeaseLost) say what
// happened meanwhile. The others treat a Lease that vanished while live
// (deleted, unlabelled or replaced) as holding every bucket, since its
// holder may have claimed buckets in versions they never read: no claim
// is made until it would have expired, counted from when it vanished, or
// until its holder's new Lease supersedes it. An edit that removes buckets
// from a live member's held set cannot be told from a release: another
// member may handle them too until the holder notices, at its next read
// or write.
//
// # Assignment
//
// The hash space is cut into Buckets equal slices (1024 by default). Each
// live member's quota is its equal share; a member keeps what it holds up
// to its quota, and the rest goes to members below quota by a fixed
// preference per bucket. Every replica computes the same plan from the
// same Leases, a handoff in progress plans the same target, and a join or
// a leave moves exactly the newcomer's quota or the leaver's buckets: the
// least any balanced assignment can (for up to 31 members with 1024
// buckets). Preferences come in runs, so a member's selector is a few
// dozen ranges at most (see maxRanges).
//
// # Handoff: cache the union, handle one
//
// A replica's informers cache the buckets it owns, acquires and releases;
// its handlers see events only for the buckets it holds the handling right
// for. A bucket changes hands by release, then acquire: the new owner
// caches the bucket first and says so in its Lease; then the old owner
// closes its gate for it (no new handler call starts; calls in progress
// finish), runs Config.Drain, records the release in its Lease and drops
// the bucket from its caches; the new owner claims it in its Lease once no
// other live Lease holds it, and opens its gate only after a later read
// shows no other claim (two simultaneous claims see each other and both
// back off). On opening, handlers get the deletes that happened while the
// bucket was in flight (kept by the new owner), then an add for every
// cached object of the bucket, each handler in order with its own stream
// of notifications (cache.SnapshotQueuer): per object, versions never go
// backwards and nothing follows a delete but a newer object's add. On
// releasing, they get nothing, and a reconciler that queued a key before
// the release asks Informer.HandlesKey or Ring.Handles before acting.
//
// A member publishes how far its handlers have got (AnnotationHandled).
// A new owner that takes a bucket over from a holder that stopped handling
// it first (dead, cut off, paused, its informers stopped, or leaving and
// out of time to wait for the new owner's cache) replays the
// bucket's deletes since that position from the watch history and hands
// them to its handlers before the adds; where the history is gone it says
// so (Status.Unreplayed, LastError).
//
// # Guarantees
//
//   - At most one replica's handlers are called for an object at any
//     instant, under the clock-rate assumption above, unless a handler call
//     outlives the renew deadline (the fence stops new calls, not one in
//     progress).
//   - After a graceful change (a join, or a leave through Run's context) an
//     object goes without a handling replica for a few RetryPeriods at most
//     (the release, a read, a claim and its verification; plus Drain).
//   - After a replica dies or is cut off, its objects go without a handler
//     for at most LeaseDuration plus a few RetryPeriods.
//   - A replica whose Lease was lost rejoins within a few RetryPeriods of
//     reaching the server again, whatever became of the Lease.
//
// Status and WaitForSync say whether the ring is formed, what a replica
// waits for (which member still holds which buckets), whether it is
// fenced, and whether its server ignores shard selectors (informers then
// filter locally: handling is as exact, only the network and decoding
// savings are lost).
//
// # A ring that cannot work says so
//
// A replica that cannot write its Lease or read the ring (its Leases are
// forbidden, or their namespace does not exist) never plans its buckets,
// so its informers never start; one whose Run was never called, likewise.
// Everywhere a user looks says why: Status (Started, LastError), the
// error of Status.Err, Ring.WaitForSync and Informer.WaitForSync (and so
// the factories' WaitForSync over ring informers), which wraps
// ErrNotFormed and the last error while no round has succeeded since
// (apierrors.IsForbidden works on it),
// and Informer.Health, whose Gate is that error while the ring is not
// formed (Healthy is false then). Failing rounds are logged at error
// level with klog (the logger of Run's context): the first failure, then
// at most once a minute while they go on, and once, at info level, when
// a round succeeds again. The Role a ring needs is in docs/sharding.md:
// get, list, create, update and delete on coordination.k8s.io leases in
// the Lease namespace.
package ring
