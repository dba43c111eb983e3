package cache

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kreflector/cache/internal/podgen"
)

// Realistic Pods for the memory tests and benchmarks come from
// internal/podgen, which internal/lean's tests share.
const (
	podsPerReplicaSet = podgen.PerReplicaSet
	podNodes          = podgen.Nodes
)

// realisticPod is Pod i of podgen's fleet at resourceVersion rv.
func realisticPod(i, rv int) *corev1.Pod { return podgen.Pod(i, rv) }
