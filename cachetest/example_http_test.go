package cachetest_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kreflector/cache/cachetest"
)

// Serving the fake server over HTTP to client-go's real clientset.
func ExampleServer_Start() {
	srv := cachetest.NewServer(cachetest.Options{})
	defer srv.Close() // stops serving and waits for every handler
	srv.Resource(cachetest.Type{Resource: "configmaps", Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}})
	srv.Start()

	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, name := range []string{"b", "a"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := cs.CoreV1().ConfigMaps("demo").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			fmt.Println(err)
			return
		}
	}
	list, err := cs.CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, cm := range list.Items {
		fmt.Printf("%s/%s@%s\n", cm.Namespace, cm.Name, cm.ResourceVersion)
	}
	fmt.Println("list at", list.ResourceVersion)
	// Output:
	// demo/a@2
	// demo/b@1
	// list at 2
}
