package cachetest

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// Divergence is how a store's contents differ from a server's. Entries are
// "key@resourceVersion", sorted.
type Divergence struct {
	// Lost objects are on the server but not in the store.
	Lost []string
	// Phantom objects are in the store but not on the server (or cannot be
	// keyed).
	Phantom []string
	// Stale objects are in both with different resourceVersions; entries
	// read "key@storeRV, server has RV".
	Stale []string
}

// Empty says whether the store matched the server exactly.
func (d Divergence) Empty() bool {
	return len(d.Lost) == 0 && len(d.Phantom) == 0 && len(d.Stale) == 0
}

// String summarises the divergence.
func (d Divergence) String() string {
	if d.Empty() {
		return "store matches server"
	}
	return fmt.Sprintf("lost %d %v, phantom %d %v, stale %d %v",
		len(d.Lost), d.Lost, len(d.Phantom), d.Phantom, len(d.Stale), d.Stale)
}

// Compare compares server objects (for example from Resource.Objects) with
// a store's contents (for example its List()), by key and resourceVersion.
func Compare(server []runtime.Object, store []interface{}) Divergence {
	want := map[string]string{}
	for _, o := range server {
		key, rv := splitDescription(describe(o))
		want[key] = rv
	}
	var d Divergence
	seen := map[string]bool{}
	for _, o := range store {
		desc := describe(o)
		key, rv := splitDescription(desc)
		seen[key] = true
		switch serverRV, ok := want[key]; {
		case !ok:
			d.Phantom = append(d.Phantom, desc)
		case serverRV != rv:
			d.Stale = append(d.Stale, fmt.Sprintf("%s, server has %s", desc, serverRV))
		}
	}
	for key, rv := range want {
		if !seen[key] {
			d.Lost = append(d.Lost, key+"@"+rv)
		}
	}
	slices.Sort(d.Lost)
	slices.Sort(d.Phantom)
	slices.Sort(d.Stale)
	return d
}

func splitDescription(desc string) (string, string) {
	i := strings.LastIndex(desc, "@")
	if i < 0 {
		return desc, ""
	}
	return desc[:i], desc[i+1:]
}
