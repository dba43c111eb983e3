//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/ring"
)

// docsRBAC reads the Role and RoleBinding docs/sharding.md gives a ring
// (the yaml block after "**RBAC.**").
func docsRBAC(t *testing.T) (*rbacv1.Role, *rbacv1.RoleBinding) {
	t.Helper()
	doc, err := os.ReadFile("../docs/sharding.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "**RBAC.**")
	if !ok {
		t.Fatal("docs/sharding.md has no **RBAC.** paragraph")
	}
	_, block, ok := strings.Cut(after, "```yaml\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("docs/sharding.md's RBAC paragraph has no yaml block")
	}
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(block), 4096)
	role, binding := &rbacv1.Role{}, &rbacv1.RoleBinding{}
	if err := dec.Decode(role); err != nil {
		t.Fatalf("decoding the Role: %v", err)
	}
	if err := dec.Decode(binding); err != nil {
		t.Fatalf("decoding the RoleBinding: %v", err)
	}
	if role.Kind != "Role" || binding.Kind != "RoleBinding" || len(binding.Subjects) != 1 {
		t.Fatalf("docs/sharding.md's RBAC block holds a %s and a %s with %d subjects, want a Role and a RoleBinding of one", role.Kind, binding.Kind, len(binding.Subjects))
	}
	var more rbacv1.Role
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		t.Fatalf("docs/sharding.md's RBAC block holds more than a Role and a RoleBinding (%v)", err)
	}
	return role, binding
}

// ringUser creates, in ns, a service account named name that may list and
// watch ConfigMaps there and, if withRole, is bound to docs/sharding.md's
// Role; it returns a client config impersonating it.
func ringUser(t *testing.T, admin kubernetes.Interface, ns, name string, withRole bool) *rest.Config {
	t.Helper()
	ctx := t.Context()
	bind := func(role *rbacv1.Role, binding *rbacv1.RoleBinding) {
		role.Namespace, binding.Namespace = ns, ns
		binding.RoleRef.Name = role.Name
		binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reader := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name + "-configmaps"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}}}
	bind(reader, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-configmaps"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role"}})
	if withRole {
		role, binding := docsRBAC(t)
		role.Name, binding.Name = name+"-ring", name+"-ring"
		bind(role, binding)
	}
	user := "system:serviceaccount:" + ns + ":" + name
	waitAllowed(t, admin, user, authorizationv1.ResourceAttributes{Namespace: ns, Resource: "configmaps"}, "list", "watch")
	if withRole {
		waitAllowed(t, admin, user, authorizationv1.ResourceAttributes{Namespace: ns, Group: "coordination.k8s.io", Resource: "leases"}, "get", "list", "create", "update", "delete")
	}
	cfg := rest.CopyConfig(testCluster.admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// waitAllowed waits until kube-apiserver's authorizer, which learns of
// new Roles and RoleBindings through its informers, allows user each of
// verbs on what.
func waitAllowed(t *testing.T, admin kubernetes.Interface, user string, what authorizationv1.ResourceAttributes, verbs ...string) {
	t.Helper()
	deadline := time.Now().Add(minute)
	for _, verb := range verbs {
		attrs := what
		attrs.Verb = verb
		for {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}
			got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is not allowed to %s %s within a minute: %s", user, verb, what.Resource, got.Status.Reason)
			}
			time.Sleep(50 * time.Millisecond) // the authorizer's informers catch up on their own
		}
	}
}

// rbacReplica is a ring of one replica with a ring informer of a
// namespace's ConfigMaps, and the lines its ring logged at error level;
// stop ends both and waits for them.
type rbacReplica struct {
	r    *ring.Ring
	inf  *ring.Informer
	stop func()

	mu     sync.Mutex
	errors []string
}

// startRBACReplica runs a ring named name of one replica as the user of
// cfg, its Leases and the ConfigMaps it informs on in ns.
func startRBACReplica(t *testing.T, cfg *rest.Config, ns, name string) *rbacReplica {
	t.Helper()
	cs := client(t, cfg)
	r, err := ring.New(ring.Config{Client: cs.CoordinationV1(), Namespace: ns, Name: name, Identity: name, Buckets: 16,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rp := &rbacReplica{r: r, inf: r.NewInformer(configMapsLW(cs, ns), &corev1.ConfigMap{}, 0, clientgocache.Indexers{}).(*ring.Informer)}
	logger := funcr.New(func(_, args string) {
		if strings.Contains(args, `"error"=`) {
			rp.mu.Lock()
			rp.errors = append(rp.errors, args)
			rp.mu.Unlock()
		}
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(t.Context()), logger))
	var wg sync.WaitGroup
	wg.Go(func() { rp.inf.RunWithContext(ctx) })
	wg.Go(func() {
		if err := r.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	var once sync.Once
	rp.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(rp.stop)
	return rp
}

func (rp *rbacReplica) errorLines() []string {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return append([]string(nil), rp.errors...)
}

// On kube-apiserver, a ring's replica whose service account has
// docs/sharding.md's Role forms the ring, handles everything alone and
// leaves cleanly (every Lease call it made was allowed); one whose Role
// lacks the Lease verbs never forms, and its informer's Health (as a
// value and as it prints) and WaitForSync, its Status and its log all
// name the forbidden error.
func TestRingOnKubeAPIServerNeedsItsRole(t *testing.T) {
	t.Parallel()
	admin := client(t, testCluster.admin)
	ns := namespace(t, admin)
	mustCreateConfigMaps(t, admin, ns, 20)

	t.Run("with the Role", func(t *testing.T) {
		rp := startRBACReplica(t, ringUser(t, admin, ns, "allowed", true), ns, "allowed")
		ctx, cancel := context.WithTimeout(t.Context(), minute)
		defer cancel()
		if err := rp.inf.WaitForSync(ctx); err != nil {
			t.Fatalf("WaitForSync: %v", err)
		}
		if s := rp.r.Status(); !s.Formed() || s.Handling != s.Buckets || s.LastError != nil {
			t.Fatalf("Status once formed: %s", s)
		}
		if h := rp.inf.Health(); !h.Healthy || h.Gate != nil {
			t.Fatalf("Health once formed: %+v", h)
		}
		if n := len(rp.inf.GetStore().ListKeys()); n != 20 {
			t.Fatalf("the informer caches %d ConfigMaps, want 20", n)
		}
		rp.stop()
		if s := rp.r.Status(); !s.Left || s.LastError != nil {
			t.Fatalf("Status after leaving: %s; want left, with no error (deleting its Lease is allowed)", s)
		}
		if _, err := admin.CoordinationV1().Leases(ns).Get(t.Context(), rp.r.LeaseName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the Lease after leaving: %v; want it deleted", err)
		}
		if lines := rp.errorLines(); len(lines) != 0 {
			t.Fatalf("logged at error level: %q", lines)
		}
	})

	t.Run("without the Lease verbs", func(t *testing.T) {
		rp := startRBACReplica(t, ringUser(t, admin, ns, "refused", false), ns, "refused")
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		err := rp.inf.WaitForSync(ctx)
		if !apierrors.IsForbidden(err) || !errors.Is(err, ring.ErrNotFormed) || !errors.Is(err, cache.ErrNotSynced) {
			t.Fatalf("WaitForSync = %v; want the forbidden Lease error, ring.ErrNotFormed, cache.ErrNotSynced", err)
		}
		t.Logf("WaitForSync: %v", err)
		h := rp.inf.Health()
		if h.Healthy || !apierrors.IsForbidden(h.Gate) || h.Reflector.State != cache.Syncing {
			t.Fatalf("Health = %+v; want Syncing and unhealthy, its Gate the forbidden Lease error", h)
		}
		if printed := fmt.Sprint(h); !strings.Contains(printed, "held back: ring not formed") || !strings.Contains(printed, "forbidden") {
			t.Fatalf("Health prints as %q; want the forbidden Lease error in it", printed)
		}
		s := rp.r.Status()
		if s.Formed() || !apierrors.IsForbidden(s.LastError) || !strings.Contains(s.String(), "forbidden") {
			t.Fatalf("Status = %s; want it not formed, its last error the forbidden Lease error", s)
		}
		lines := rp.errorLines()
		if len(lines) != 1 || !strings.Contains(lines[0], "forbidden") {
			t.Fatalf("error lines in 3 s of failing rounds: %q; want one naming the forbidden error", lines)
		}
	})
}
