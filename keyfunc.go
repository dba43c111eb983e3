package cache

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	clientgocache "k8s.io/client-go/tools/cache"
)

// KeyFunc names an object within a store. It is client-go's type, so key
// functions pass between client-go's stores and ours unchanged.
type KeyFunc = clientgocache.KeyFunc

// KeyError is returned when a KeyFunc cannot name an object; it unwraps to
// the KeyFunc's error. It is client-go's type, so errors.As with either
// package's name finds it.
type KeyError = clientgocache.KeyError

// ExplicitKey is an object that is its own key. It is client-go's type, so
// an ExplicitKey made with either package's name is recognised by both.
type ExplicitKey = clientgocache.ExplicitKey

// DeletedFinalStateUnknown is a tombstone: an object deleted while the
// watch was down, whose last state may be stale; Key is its store key. It
// is client-go's type, so the tombstones client-go's DeltaFIFO and
// RealFIFO emit after a relist are recognised by our key functions and
// stores, and ours by client-go's.
type DeletedFinalStateUnknown = clientgocache.DeletedFinalStateUnknown

// MetaNamespaceKeyFunc keys objects as "namespace/name", or "name" when
// cluster-scoped. An ExplicitKey is returned as is.
func MetaNamespaceKeyFunc(obj interface{}) (string, error) {
	if key, ok := obj.(ExplicitKey); ok {
		return string(key), nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("object has no meta: %w", err)
	}
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + m.GetName(), nil
	}
	return m.GetName(), nil
}

// DeletionHandlingMetaNamespaceKeyFunc is MetaNamespaceKeyFunc that also
// accepts DeletedFinalStateUnknown tombstones.
func DeletionHandlingMetaNamespaceKeyFunc(obj interface{}) (string, error) {
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	return MetaNamespaceKeyFunc(obj)
}

// SplitMetaNamespaceKey splits a MetaNamespaceKeyFunc key.
func SplitMetaNamespaceKey(key string) (namespace, name string, err error) {
	parts := strings.Split(key, "/")
	switch len(parts) {
	case 1:
		return "", parts[0], nil
	case 2:
		return parts[0], parts[1], nil
	}
	return "", "", fmt.Errorf("unexpected key format: %q", key)
}
