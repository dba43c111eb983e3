package cache

import "testing"

// The stream's modes: the first event other than ADDED ends the synthetic
// phase of a watch from RV "" or "0" and starts RV tracking in a
// WatchList; later events change nothing; only a gathering stream can end
// its initial events.
func TestStreamModeTransitions(t *testing.T) {
	for _, tc := range []struct {
		from, want streamMode
		gathering  bool
	}{
		{modeSynthetic, modeLive, false},
		{modeLive, modeLive, false},
		{modeGathering, modeGatheringTracked, true},
		{modeGatheringTracked, modeGatheringTracked, true},
		{modeInitialEnded, modeInitialEnded, true},
	} {
		if got := tc.from.pastAdded(); got != tc.want {
			t.Errorf("mode %d after a non-ADDED event: %d, want %d", tc.from, got, tc.want)
		}
		if tc.from.gathering() != tc.gathering {
			t.Errorf("mode %d gathering = %v", tc.from, !tc.gathering)
		}
	}
}
