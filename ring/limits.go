package ring

// maxRanges bounds the ranges of one member's selector.
const maxRanges = 64
