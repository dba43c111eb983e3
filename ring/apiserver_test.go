package ring

import (
	"fmt"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var leasesResource = coordinationv1.SchemeGroupVersion.WithResource("leases")

// serveLeasesAsKubeAPIServer makes cs answer Lease calls as kube-apiserver
// does where client-go's fake clientset does not:
//   - a create gives the Lease a uid of its own, and every create and
//     update a new resourceVersion (the fake stores whatever it is sent);
//   - an update that carries a uid is refused with 409 Conflict if the
//     stored Lease has another uid or there is none: the uid precondition
//     fails (the fake applies it, or answers 404 if there is none);
//   - an update that carries another resourceVersion than the stored one
//     is refused with 409 Conflict (the fake applies it);
//   - a delete whose preconditions fail is refused with 409 Conflict (the
//     fake ignores them).
//
// Reactors run one at a time under the fake's lock, so each check and the
// write that follows it are one step.
func serveLeasesAsKubeAPIServer(cs *fake.Clientset) {
	var uids, rvs atomic.Int64
	nextRV := func() string { return fmt.Sprint(1000 + rvs.Add(1)) }
	cs.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease)
		l.UID = types.UID(fmt.Sprintf("lease-uid-%d", uids.Add(1)))
		l.ResourceVersion = nextRV()
		return false, nil, nil // the tracker stores it
	})
	cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		cur, err := storedLease(cs, a.GetNamespace(), l.Name)
		switch {
		case apierrors.IsNotFound(err) && l.UID != "":
			return true, nil, uidPreconditionFailed(l.Name, l.UID, "")
		case err != nil:
			return true, nil, err
		case l.UID != "" && l.UID != cur.UID:
			return true, nil, uidPreconditionFailed(l.Name, l.UID, cur.UID)
		case l.ResourceVersion != "" && l.ResourceVersion != cur.ResourceVersion:
			return true, nil, apierrors.NewConflict(leasesResource.GroupResource(), l.Name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		l.UID = cur.UID // an update without a uid keeps the stored one
		l.ResourceVersion = nextRV()
		return false, nil, nil
	})
	cs.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		p := d.GetDeleteOptions().Preconditions
		if p == nil {
			return false, nil, nil
		}
		cur, err := storedLease(cs, a.GetNamespace(), d.GetName())
		switch {
		case err != nil:
			return true, nil, err
		case p.UID != nil && *p.UID != cur.UID:
			return true, nil, uidPreconditionFailed(d.GetName(), *p.UID, cur.UID)
		case p.ResourceVersion != nil && *p.ResourceVersion != cur.ResourceVersion:
			return true, nil, apierrors.NewConflict(leasesResource.GroupResource(), d.GetName(), fmt.Errorf("precondition failed: resourceVersion in precondition: %s, resourceVersion in object meta: %s", *p.ResourceVersion, cur.ResourceVersion))
		}
		return false, nil, nil
	})
}

// storedLease reads a Lease from cs's tracker, past the reactors.
func storedLease(cs *fake.Clientset, ns, name string) (*coordinationv1.Lease, error) {
	obj, err := cs.Tracker().Get(leasesResource, ns, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*coordinationv1.Lease), nil
}

// uidPreconditionFailed is kube-apiserver's answer to a write whose uid
// precondition fails, a deleted object's included.
func uidPreconditionFailed(name string, want, got types.UID) error {
	return apierrors.NewConflict(leasesResource.GroupResource(), name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", want, got))
}
