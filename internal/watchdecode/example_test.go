package watchdecode_test

import (
	"context"
	"fmt"
	"runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kreflector/cache/internal/watchdecode"
)

// A clientset's watch of Pods, decoded on every core: the decoders are
// negotiated once per client; each watch opens the response body with
// Stream (which, unlike Watch, applies the client's rate limiter and
// retries only on Retry-After) and hands it to New.
func ExampleNew() {
	var client kubernetes.Interface // a clientset, from its rest.Config
	decoders, err := watchdecode.NewDecoders(scheme.Codecs.WithoutConversion())
	if err != nil {
		panic(err)
	}
	opts := metav1.ListOptions{Watch: true, AllowWatchBookmarks: true}
	body, err := client.CoreV1().RESTClient().Get().Resource("pods").
		VersionedParams(&opts, scheme.ParameterCodec).Stream(context.TODO())
	if err != nil {
		panic(err)
	}
	w := watchdecode.New(body, decoders, watchdecode.Options{Workers: runtime.GOMAXPROCS(0)})
	defer w.Stop()
	for ev := range w.ResultChan() {
		fmt.Println(ev.Type)
	}
}
