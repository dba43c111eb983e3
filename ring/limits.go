package ring

// maxRanges bounds the ranges of one member's selector that the plan's
// runs of preference give in practice (ring/assign_test.go measures at most
// 30 over random joins and leaves).
const maxRanges = 64

// maxBuckets is the largest ring: even a member owning every other bucket
// (maxBuckets/2 ranges, about 83 bytes each with its " || ") stays within
// the 100,000 characters kube-apiserver 1.37 accepts in a shard selector
// (TestShardSelectorLimits), so no plan can make a selector the server
// refuses.
const maxBuckets = 2048
