package cache

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgocache "k8s.io/client-go/tools/cache"
)

// ObjectName is client-go's namespace-and-name reference to an object, the
// structured form of a MetaNamespaceKeyFunc key.
type ObjectName = clientgocache.ObjectName

// NewObjectName is client-go's NewObjectName.
func NewObjectName(namespace, name string) ObjectName {
	return clientgocache.NewObjectName(namespace, name)
}

// ObjectToName is client-go's ObjectToName: the object's namespace and name.
func ObjectToName(obj interface{}) (ObjectName, error) { return clientgocache.ObjectToName(obj) }

// DeletionHandlingObjectToName is ObjectToName that also accepts a
// DeletedFinalStateUnknown, as client-go's does.
func DeletionHandlingObjectToName(obj interface{}) (ObjectName, error) {
	return clientgocache.DeletionHandlingObjectToName(obj)
}

// MetaObjectToName is client-go's MetaObjectToName.
func MetaObjectToName(obj metav1.Object) ObjectName { return clientgocache.MetaObjectToName(obj) }

// ParseObjectName is client-go's ParseObjectName: the inverse of
// ObjectName.String.
func ParseObjectName(str string) (ObjectName, error) { return clientgocache.ParseObjectName(str) }

// NamespacedNameAsObjectName is client-go's NamespacedNameAsObjectName.
func NamespacedNameAsObjectName(nn types.NamespacedName) ObjectName {
	return clientgocache.NamespacedNameAsObjectName(nn)
}
