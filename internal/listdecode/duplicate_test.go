package listdecode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A JSON list that names its items more than once decodes as
// encoding/json decodes it: the last value wins, and (typed) every
// array's items are decoded, their errors counting; the dynamic client
// only parses the arrays before the last.
func TestItemsNamedTwice(t *testing.T) {
	const head = `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},`
	bodies := map[string]string{
		"two arrays":              head + `"items":[{"metadata":{"name":"a"}}],"items":[{"metadata":{"name":"b"}},{"metadata":{"name":"c"}}]}`,
		"three arrays":            head + `"items":[{"metadata":{"name":"a"}}],"items":[],"items":[{"metadata":{"name":"d"}}]}`,
		"an empty array last":     head + `"items":[{"metadata":{"name":"a"}}],"items":[]}`,
		"null last":               head + `"items":[{"metadata":{"name":"a"}}],"items":null}`,
		"null first":              head + `"items":null,"items":[{"metadata":{"name":"a"}}]}`,
		"a type error first":      head + `"items":[{"metadata":{"name":5}}],"items":[{"metadata":{"name":"b"}}]}`,
		"a type error last":       head + `"items":[{"metadata":{"name":"a"}}],"items":[{"metadata":{"name":5}}]}`,
		"a number first":          head + `"items":[1],"items":[{"metadata":{"name":"b"}}]}`,
		"a syntax error first":    head + `"items":[{"metadata":{"name":"a"}x}],"items":[{"metadata":{"name":"b"}}]}`,
		"metadata between":        head + `"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"b"}}]}`,
		"a string last":           head + `"items":[{"metadata":{"name":"a"}}],"items":"x"}`,
		"many, then a short last": head + `"items":[` + manyPods(40) + `],"items":[{"metadata":{"name":"z"}}]}`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			compare(t, Target{Typed: &corev1.PodList{}}, ctJSON, []byte(body))
			compare(t, Target{Unstructured: true}, ctJSON, []byte(body))
			compare(t, Target{Metadata: true}, ctJSON, []byte(body))
		})
	}
}

func manyPods(n int) string {
	out := ""
	for i := range n {
		if i > 0 {
			out += ","
		}
		out += `{"metadata":{"name":"p` + string(rune('a'+i%26)) + `"}}`
	}
	return out
}
