package listwatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"
)

// watchServer answers a WATCH with three events of Pods (their
// metadata, if asked for) and a bookmark, then ends the stream; a LIST as recorder does.
type watchServer struct{ *recorder }

func (s watchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("watch") != "true" {
		s.recorder.ServeHTTP(w, r)
		return
	}
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" accept="+r.Header.Get("Accept"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	tm := metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
		tm = metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}
	}
	for i, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark} {
		pod := corev1.Pod{TypeMeta: tm, ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("p%d", i), Namespace: "ns", ResourceVersion: fmt.Sprint(10 + i)}}
		raw, _ := json.Marshal(&pod)
		enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}})
	}
}

// TestWatchesAskAndAnswerAsTheirClients: each ListWatch's WATCH sends the
// request its client's Watch sends and delivers the same events.
func TestWatchesAskAndAnswerAsTheirClients(t *testing.T) {
	srv := watchServer{&recorder{}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	timeout := int64(300)
	opts := metav1.ListOptions{ResourceVersion: "9", AllowWatchBookmarks: true, TimeoutSeconds: &timeout}
	ctx := context.Background()
	for _, p := range pairs(t, &restclient.Config{Host: hs.URL}) {
		want := drain(t, p.watch(ctx, opts))
		wantReq := srv.take()
		w, err := p.ours.WatchWithContext(ctx, opts)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		got := drain(t, w)
		if gotReq := srv.take(); !reflect.DeepEqual(gotReq, wantReq) {
			t.Errorf("%s: requests\n%q\nwant (the client's)\n%q", p.name, gotReq, wantReq)
		}
		if len(want) != 4 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: events\n%#v\nwant\n%#v", p.name, got, want)
		}
	}
}

func drain(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	defer w.Stop()
	var evs []watch.Event
	for ev := range w.ResultChan() {
		evs = append(evs, ev)
	}
	return evs
}
