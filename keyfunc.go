package cache

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
)

// KeyFunc names an object within a store.
type KeyFunc func(obj interface{}) (string, error)

// KeyError is returned when a KeyFunc cannot name an object.
type KeyError struct {
	Obj interface{}
	Err error
}

func (k KeyError) Error() string {
	return fmt.Sprintf("couldn't create key for object %+v: %v", k.Obj, k.Err)
}

// Unwrap returns the KeyFunc's error.
func (k KeyError) Unwrap() error { return k.Err }

// ExplicitKey is an object that is its own key.
type ExplicitKey string

// DeletedFinalStateUnknown is a tombstone: an object deleted while the
// watch was down, whose last state may be stale. Key is its store key.
type DeletedFinalStateUnknown struct {
	Key string
	Obj interface{}
}

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
