package ring

// opening is one opening of buckets by the gate: the buckets and the
// generation each got. It travels to every gated handler in order with
// the informer's notifications (cache.SnapshotQueuer), with the cached
// objects of those buckets as they stood at that point of the stream. A
// handler passes a bucket's events from there on, and only while the
// bucket's generation is still the gate's current one: a bucket closed
// and opened again waits for its newer opening. So the adds a handler
// gets on opening are never older than an event it got before them, and
// every event after them is newer.
type opening struct {
	set  set
	gens []uint32 // by bucket; meaningful for the buckets of set
	// replays are the deletes to fetch before the opening is handed
	// over (see replayReq).
	replays []replayReq
}

// informerOpening is an opening as one informer's handlers get it: with
// the deletes replayed for its type, oldest first.
type informerOpening struct {
	opening  *opening
	replayed []interface{}
}

// positionMark is the tag of the snapshots the ring queues each round to
// learn how far each handler has got: a handler that processes one has
// been handed every change up to its resourceVersion.
type positionMark struct{}
