package cache

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/utils/ptr"
)

// TestUseWatchListFollowsClientGoGate: with UseWatchList unset, a
// Reflector starts with WatchList as client-go's does, by its
// WatchListClient feature gate; set, UseWatchList wins either way.
func TestUseWatchListFollowsClientGoGate(t *testing.T) {
	base := clientgofeatures.FeatureGates()
	defer clientgofeatures.ReplaceFeatureGates(base)
	lw := &ListWatch{}
	cases := []struct {
		gateOn bool
		use    *bool
		want   bool
	}{
		{true, nil, true},
		{false, nil, false},
		{false, ptr.To(true), true},
		{true, ptr.To(false), false},
	}
	for _, c := range cases {
		if c.gateOn {
			clientgofeatures.ReplaceFeatureGates(gatesWith{base: base, on: clientgofeatures.WatchListClient})
		} else {
			clientgofeatures.ReplaceFeatureGates(gatesWithout{base: base, off: clientgofeatures.WatchListClient})
		}
		r := NewReflectorWithOptions(lw, &corev1.Pod{}, NewStore(MetaNamespaceKeyFunc), ReflectorOptions{UseWatchList: c.use})
		if r.server.watchList != c.want {
			t.Errorf("gate on %v, UseWatchList %v: WatchList %v, want %v", c.gateOn, c.use, r.server.watchList, c.want)
		}
	}
}

// gatesWith is base with one feature turned on, whatever the environment
// (KUBE_FEATURE_…) says.
type gatesWith struct {
	base clientgofeatures.Gates
	on   clientgofeatures.Feature
}

func (g gatesWith) Enabled(f clientgofeatures.Feature) bool {
	return f == g.on || g.base.Enabled(f)
}
