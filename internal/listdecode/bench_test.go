package listdecode

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// BenchmarkDecode decodes a page of 10,000 realistic Pods (about 66 MB of
// JSON) as client-go's clientset does it (io.ReadAll of the body, then
// the negotiated decoder's Decode into a new PodList: Do and Into) and
// with Decode at 1 and 2 workers.
func BenchmarkDecode(b *testing.B) {
	list := podList(10_000)
	bodies := map[string][]byte{ctJSON: jsonOf(b, list), ctProtobuf: protobufOf(b, list, scheme.Scheme)}
	ns := rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
	for _, ct := range []string{ctJSON, ctProtobuf} {
		body := bodies[ct]
		name := map[string]string{ctJSON: "json", ctProtobuf: "protobuf"}[ct]
		b.Run(name+"/client-go", func(b *testing.B) {
			dec, err := runtime.NewClientNegotiator(ns, schema.GroupVersion{}).Decoder(ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				data, err := io.ReadAll(bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := dec.Decode(data, nil, &corev1.PodList{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, w := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", name, w), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Decode(context.Background(), bytes.NewReader(body), Target{Typed: &corev1.PodList{}}, Options{Workers: w}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
