// Package podgen makes the realistic Pods of the memory tests and
// benchmarks (the root package's tests and the benchmark harness): what a
// controller watching a cluster's Pods holds. Pods come in ReplicaSets of
// PerReplicaSet, which share labels, annotations, owner, container spec
// and managedFields' field sets; images come from a small set, nodes from
// a pool of Nodes; names, uids, IPs and container IDs are each Pod's own.
// Encoded as JSON a Pod is about 6.6 KB. Codec gives the encoders and
// decoder a typed client negotiates; Decoded, Changed and CheckAdopted
// serve the tests of adoption (they take a testing.TB: the package is
// imported by tests only).
package podgen

import (
	stdjson "encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

const (
	// PerReplicaSet is the number of Pods in a ReplicaSet: Pods i and j
	// share one when i/PerReplicaSet == j/PerReplicaSet.
	PerReplicaSet = 8
	// Nodes is the size of the node pool: Pods i and i+Nodes share a node.
	Nodes   = 500
	podApps = 400
)

var podImages = []string{
	"registry.example.com/platform/api-server:v1.42.7",
	"registry.example.com/platform/worker:v3.1.0",
	"registry.example.com/web/frontend:2024.11.3",
	"registry.example.com/data/ingest:v0.19.2",
	"registry.example.com/data/query-engine:v5.0.1",
	"registry.example.com/infra/metrics-agent:v2.8.4",
}

const podSidecarImage = "registry.example.com/mesh/envoy-proxy:v1.31.2-distroless"

// hex16 renders n as 16 hex digits.
func hex16(n uint64) string { return fmt.Sprintf("%016x", n*0x9e3779b97f4a7c15) }

// Pod is Pod i of the fleet at resourceVersion rv. Every string is built
// afresh, as a decoder would.
func Pod(i, rv int) *corev1.Pod {
	rs := i / PerReplicaSet
	app := "app-" + strconv.Itoa(rs%podApps)
	hash := hex16(uint64(rs))[:10]
	p := &corev1.Pod{
		ObjectMeta: podMeta(i, rv, rs, app, hash),
		Spec:       podSpec(i, rs, app),
		Status:     podStatus(i, rs),
	}
	return p
}

func podMeta(i, rv, rs int, app, hash string) metav1.ObjectMeta {
	ns := "team-" + strconv.Itoa(rs%40)
	rsName := app + "-" + hash
	return metav1.ObjectMeta{
		Name:              rsName + "-" + hex16(uint64(i))[:5],
		GenerateName:      rsName + "-",
		Namespace:         ns,
		UID:               types.UID(podUID(uint64(i) + 1<<40)),
		ResourceVersion:   strconv.Itoa(rv),
		CreationTimestamp: metav1.Unix(1_700_000_000+int64(i), 0),
		Labels: map[string]string{
			"app.kubernetes.io/name":      app,
			"app.kubernetes.io/instance":  app + "-production",
			"app.kubernetes.io/component": []string{"backend", "frontend", "worker"}[rs%3],
			"app.kubernetes.io/part-of":   "platform-" + strconv.Itoa(rs%12),
			"pod-template-hash":           hash,
			"team":                        ns,
		},
		Annotations: map[string]string{
			"kubectl.kubernetes.io/restartedAt": "2024-11-0" + strconv.Itoa(1+rs%9) + "T10:15:00Z",
			"prometheus.io/scrape":              "true",
			"prometheus.io/port":                "9090",
		},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: types.UID(podUID(uint64(rs))),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				Time: ptr.To(metav1.Unix(1_700_000_000+int64(rs), 0)), FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(specFields(app))}},
			{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				Time: ptr.To(metav1.Unix(1_700_000_100+int64(rs), 0)), FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(statusFields)}, Subresource: "status"},
		},
	}
}

func podUID(n uint64) string {
	h := hex16(n) + hex16(n+7)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// specFields is the controller's field set: the same for a template.
func specFields(app string) string {
	return `{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/restartedAt":{},"f:prometheus.io/port":{},"f:prometheus.io/scrape":{}},` +
		`"f:generateName":{},"f:labels":{".":{},"f:app.kubernetes.io/component":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/name":{},` +
		`"f:app.kubernetes.io/part-of":{},"f:pod-template-hash":{},"f:team":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"owner\"}":{}}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"` + app + `\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"LOG_LEVEL\"}":{".":{},"f:name":{},"f:value":{}}},` +
		`"f:image":{},"f:imagePullPolicy":{},"f:livenessProbe":{".":{},"f:httpGet":{".":{},"f:path":{},"f:port":{}}},` +
		`"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},` +
		`"f:resources":{".":{},"f:limits":{".":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}},` +
		`"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:serviceAccountName":{},"f:volumes":{".":{},"k:{\"name\":\"config\"}":{".":{},"f:configMap":{".":{},"f:name":{}},"f:name":{}}}}}`
}

// statusFields is the kubelet's field set.
const statusFields = `{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},` +
	`"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},` +
	`"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{}},"f:startTime":{}}}`

func podSpec(i, rs int, app string) corev1.PodSpec {
	return corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}},
			{Name: "kube-api-access-" + hex16(uint64(i))[5:10], VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				},
				DefaultMode: ptr.To[int32](420),
			}}},
		},
		Containers:                    []corev1.Container{appContainer(i, rs, app), envoyContainer(i)},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		DNSPolicy:                     corev1.DNSClusterFirst,
		ServiceAccountName:            app,
		DeprecatedServiceAccount:      app,
		NodeName:                      "node-pool-a-" + strconv.Itoa(i%Nodes),
		SecurityContext:               &corev1.PodSecurityContext{},
		SchedulerName:                 "default-scheduler",
		Tolerations: []corev1.Toleration{
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		},
		Priority:           ptr.To[int32](0),
		EnableServiceLinks: ptr.To(true),
		PreemptionPolicy:   ptr.To(corev1.PreemptLowerPriority),
	}
}

func appContainer(i, rs int, app string) corev1.Container {
	return corev1.Container{
		Name:  app,
		Image: podImages[rs%len(podImages)],
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			{Name: "LOG_LEVEL", Value: "info"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
		},
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", ReadOnly: true, MountPath: "/etc/app"},
			{Name: "kube-api-access-" + hex16(uint64(i))[5:10], ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"},
		},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds: 10, FailureThreshold: 3, TimeoutSeconds: 1, SuccessThreshold: 1},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds: 5, FailureThreshold: 3, TimeoutSeconds: 1, SuccessThreshold: 1},
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
	}
}

func envoyContainer(i int) corev1.Container {
	return corev1.Container{
		Name:  "envoy",
		Image: podSidecarImage,
		Args:  []string{"--config-path", "/etc/envoy/envoy.yaml", "--log-level", "warn", "--drain-time-s", "45"},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "kube-api-access-" + hex16(uint64(i))[5:10], ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"},
		},
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
	}
}

func podStatus(i, rs int) corev1.PodStatus {
	node := i % Nodes
	hostIP := "10.0." + strconv.Itoa(node/250) + "." + strconv.Itoa(node%250+1)
	podIP := "10.244." + strconv.Itoa(i/250%250) + "." + strconv.Itoa(i%250+1)
	started := metav1.Unix(1_700_000_200+int64(rs), 0)
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: started}
	}
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{cond("PodReadyToStartContainers"), cond(corev1.PodInitialized),
			cond(corev1.PodReady), cond(corev1.ContainersReady), cond(corev1.PodScheduled)},
		HostIP: hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}},
		PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
		StartTime: &started,
		ContainerStatuses: []corev1.ContainerStatus{
			containerStatus("app-"+strconv.Itoa(rs%podApps), podImages[rs%len(podImages)], i, started),
			containerStatus("envoy", podSidecarImage, i+1<<30, started),
		},
		QOSClass: corev1.PodQOSBurstable,
	}
}

func containerStatus(name, image string, id int, started metav1.Time) corev1.ContainerStatus {
	digest := hex16(uint64(len(image))) + hex16(uint64(len(image))*3) + hex16(uint64(len(image))*5) + hex16(uint64(len(image))*7)
	return corev1.ContainerStatus{
		Name:        name,
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		Ready:       true,
		Image:       image,
		ImageID:     image[:strings.LastIndexByte(image, ':')] + "@sha256:" + digest,
		ContainerID: "containerd://" + hex16(uint64(id)) + hex16(uint64(id)+1) + hex16(uint64(id)+2) + hex16(uint64(id)+3),
		Started:     ptr.To(true),
	}
}

// Codec encodes and decodes with the content types a typed client
// negotiates: "json" or "protobuf".
func Codec(encoding string) (runtime.Encoder, runtime.Decoder) {
	decoder := serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer()
	if encoding == "protobuf" {
		return protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), decoder
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{}), decoder
}

// Decoded is p as a client decodes it: from JSON bytes, every string its
// own.
func Decoded(t testing.TB, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	b, err := stdjson.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	out := &corev1.Pod{}
	if err := stdjson.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Changed is Pod i at rv with its first container's image changed, as a
// client decodes it: a version of Pod i that differs from the others in
// its resourceVersion and that image.
func Changed(t testing.TB, i, rv int) *corev1.Pod {
	p := Pod(i, rv)
	p.Spec.Containers[0].Image = "registry.example.com/other:v2"
	return Decoded(t, p)
}

// CheckAdopted checks that obj holds held's copy of the strings two
// versions of one Pod (see Changed) have in common, and held's field set
// if mutable and only then.
func CheckAdopted(t testing.TB, obj, held *corev1.Pod, mutable bool) {
	t.Helper()
	adopted := map[string][2]string{
		"name":          {obj.Name, held.Name},
		"uid":           {string(obj.UID), string(held.UID)},
		"namespace":     {obj.Namespace, held.Namespace},
		"node":          {obj.Spec.NodeName, held.Spec.NodeName},
		"sidecar image": {obj.Spec.Containers[1].Image, held.Spec.Containers[1].Image},
		"owner uid":     {string(obj.OwnerReferences[0].UID), string(held.OwnerReferences[0].UID)},
		"container id":  {obj.Status.ContainerStatuses[0].ContainerID, held.Status.ContainerStatuses[0].ContainerID},
	}
	for what, v := range adopted {
		if unsafe.StringData(v[0]) != unsafe.StringData(v[1]) {
			t.Errorf("%s: not the held copy", what)
		}
	}
	if got := unsafe.SliceData(obj.ManagedFields[0].FieldsV1.Raw) == unsafe.SliceData(held.ManagedFields[0].FieldsV1.Raw); got != mutable {
		t.Errorf("field set adopted = %v, want %v", got, mutable)
	}
}
