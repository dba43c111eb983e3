package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	clientgometadatainformer "k8s.io/client-go/metadata/metadatainformer"
	clientgocache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache"
	"github.com/kreflector/cache/metadatainformer"
)

// The metadata-only memory benchmark: client-go's metadatainformer and
// ours side by side, each in a process of its own (TestMemChild with
// Metadata set), on the metadata of the same realistic Pods, sent as
// PartialObjectMetadataList pages and decoded as client-go's metadata
// client decodes them.

// BenchmarkMetadataMemory syncs a metadata-only informer of realistic
// Pods, built by client-go's metadatainformer.NewFilteredMetadataInformer
// and by ours (defaults; ShareStrings; lean: ShareStrings, ShareMaps and
// DropManagedFields), each over the same metadata.Interface, and prints
// the heap per object, the synced heap and the peak during the sync. About
// a minute at its default size on 2 cores:
//
//	go test -run '^$' -bench BenchmarkMetadataMemory -benchtime 1x -timeout 1h ./bench/
//
// KREFLECTOR_METABENCH_SIZES (default "10000") and KREFLECTOR_METABENCH_RUNS
// (processes per implementation and size, default 3) change the work.
// Page files go beside the memory benchmark's, in .cache/membench.
func BenchmarkMetadataMemory(b *testing.B) {
	sizes, runs, dir := memBenchSettings(b, "KREFLECTOR_METABENCH", "10000")
	all := map[memKey][]memResult{}
	for _, n := range sizes {
		if err := writeMetaPages(metaPagesPath(dir, n), n); err != nil {
			b.Fatal(err)
		}
		for rep := range runs {
			for k := range memImplOrder {
				impl := memImplOrder[(k+rep)%len(memImplOrder)] // no implementation always first
				cfg := memChildConfig{Impl: impl, N: n, Encoding: "json", Dir: dir, Metadata: true}
				res, err := runMemChildProcess(cfg)
				if err != nil {
					b.Fatal(err)
				}
				all[cfg.key()] = append(all[cfg.key()], *res)
			}
		}
	}
	for _, n := range sizes {
		fmt.Printf("\n%d Pods' metadata (PartialObjectMetadata, JSON), medians of %d processes per implementation:\n\n", n, runs)
		printMemTable(os.Stdout, n, "json", memColumns(all, "json", n, memImplOrder), metaRows, all)
	}
}

// metaRows are the metadata benchmark's figures.
var metaRows = []memRow{memRows[0], memRows[1], memRows[2],
	{"sync time (GOGC 100)", func(r memResult) float64 { return r.SyncSeconds }, "%.2f s", true}}

// metaPods is the GVR the metadata informers are built for.
var metaPods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// metaImpls are the metadata informers compared, by name: each built by
// its package's NewFilteredMetadataInformer over the pages' client.
var metaImpls = map[string]func(metadata.Interface) clientgocache.SharedIndexInformer{
	"client-go": func(c metadata.Interface) clientgocache.SharedIndexInformer {
		return clientgometadatainformer.NewFilteredMetadataInformer(c, metaPods, metav1.NamespaceAll, 0, memIndexers(), nil).Informer()
	},
	"kreflector": func(c metadata.Interface) clientgocache.SharedIndexInformer {
		return metaOurs(c, cache.ReflectorOptions{})
	},
	"kreflector+share": func(c metadata.Interface) clientgocache.SharedIndexInformer {
		return metaOurs(c, cache.ReflectorOptions{ShareStrings: true})
	},
	"kreflector+lean": func(c metadata.Interface) clientgocache.SharedIndexInformer {
		return metaOurs(c, cache.ReflectorOptions{ShareStrings: true, ShareMaps: true, DropManagedFields: true})
	},
	"kreflector+compact": func(c metadata.Interface) clientgocache.SharedIndexInformer {
		return metaOurs(c, cache.ReflectorOptions{Compact: &cache.CompactOptions{}})
	},
	"kreflector+compact+lean": func(c metadata.Interface) clientgocache.SharedIndexInformer {
		return metaOurs(c, cache.ReflectorOptions{Compact: &cache.CompactOptions{}, DropManagedFields: true})
	},
}

func metaOurs(c metadata.Interface, o cache.ReflectorOptions) clientgocache.SharedIndexInformer {
	var gi informers.GenericInformer = metadatainformer.NewFilteredMetadataInformer(c, metaPods, metav1.NamespaceAll, 0, memIndexers(), nil)
	if err := gi.Informer().(cache.ReflectorConfigurable).SetReflectorOptions(o); err != nil {
		panic(err)
	}
	return gi.Informer()
}

// runMetaChild is a metadata benchmark process: a timed sync at the
// default GOGC, then at GOGC 10 a sync with its peak sampled.
func runMetaChild(ctx context.Context, cfg memChildConfig) (*memResult, error) {
	build, ok := metaImpls[cfg.Impl]
	if !ok {
		return nil, fmt.Errorf("metabench: no implementation %q", cfg.Impl)
	}
	pages, err := openMemPages(metaPagesPath(cfg.Dir, cfg.N))
	if err != nil {
		return nil, err
	}
	defer pages.close()
	lw := newMemLW(metaCodec(), pages)
	newInf := func(clientgocache.ListerWatcher) clientgocache.SharedIndexInformer { return build(metaClient{lw}) }
	res := &memResult{memChildConfig: cfg}
	if err := timedSync(ctx, res, lw, newInf); err != nil {
		return nil, err
	}
	memGOGC(memGCPercent)
	defer memGOGC(100)
	r, _, err := measuredSync(ctx, res, lw, newInf)
	if err != nil {
		return nil, err
	}
	defer r.stop()
	return res, checkMetaSynced(r.inf.GetStore(), cfg.N)
}

// checkMetaSynced checks that the store holds n Pods' metadata, managed
// fields and all (unless dropped), as the pages sent them.
func checkMetaSynced(s clientgocache.Store, n int) error {
	if got := len(s.ListKeys()); got != n {
		return fmt.Errorf("metabench: the store holds %d objects, want %d", got, n)
	}
	p := memPod(memInitial, n, n-1)
	obj, ok, err := s.GetByKey(p.Namespace + "/" + p.Name)
	if err != nil || !ok {
		return fmt.Errorf("metabench: the last Pod is missing (%v)", err)
	}
	if m, isMeta := obj.(*metav1.PartialObjectMetadata); !isMeta || m.UID != p.UID || len(m.Labels) != len(p.Labels) {
		return fmt.Errorf("metabench: the last Pod is held as %#v", obj)
	}
	return nil
}

// metaCodec decodes pages as client-go's metadata client does (see
// metaDecoder) into PartialObjectMetadataLists.
func metaCodec() memCodec {
	return memCodec{file: "json", dec: metaDecoder(),
		newList: func() apiruntime.Object { return &metav1.PartialObjectMetadataList{} },
		newObj:  func() apiruntime.Object { return &metav1.PartialObjectMetadata{} },
	}
}

// metaDecoder decodes JSON as client-go's metadata client does: its
// scheme's JSON serializer, without conversion.
func metaDecoder() apiruntime.Decoder {
	info, ok := apiruntime.SerializerInfoForMediaType(metainternalversionscheme.Codecs.SupportedMediaTypes(), apiruntime.ContentTypeJSON)
	if !ok {
		panic("metabench: the metadata scheme has no JSON serializer")
	}
	return metainternalversionscheme.Codecs.WithoutConversion().DecoderToVersion(info.Serializer, nil)
}

// metaPagesPath is where the metadata pages of n Pods live under dir.
func metaPagesPath(dir string, n int) string {
	return filepath.Join(dir, fmt.Sprintf("podmeta-%d.json", n))
}

// writeMetaPages writes, unless it is there already, what kube-apiserver
// answers a LIST of n Pods asked as PartialObjectMetadataList: each
// page the metadata of the memory benchmark's initial Pods.
func writeMetaPages(path string, n int) error {
	info, _ := apiruntime.SerializerInfoForMediaType(metainternalversionscheme.Codecs.SupportedMediaTypes(), apiruntime.ContentTypeJSON)
	return writePages(path, (n+memPageSize-1)/memPageSize, func(page int, w io.Writer) error {
		return info.Serializer.Encode(metaPage(n, page), w)
	})
}

// metaPage is page K of the metadata LIST of n Pods.
func metaPage(n, page int) *metav1.PartialObjectMetadataList {
	pods := memPage(memInitial, n, page)
	l := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: pods.ListMeta,
	}
	for _, p := range pods.Items {
		l.Items = append(l.Items, metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: p.ObjectMeta,
		})
	}
	return l
}

// metaClient is a metadata.Interface whose every resource LISTs and
// WATCHes through a memLW; nothing else is implemented.
type metaClient struct{ lw *memLW }

func (c metaClient) Resource(schema.GroupVersionResource) metadata.Getter {
	return metaResource{lw: c.lw}
}

// IsWatchListSemanticsUnSupported: the pages are LISTed, as memLW's are.
func (metaClient) IsWatchListSemanticsUnSupported() bool { return true }

type metaResource struct {
	metadata.ResourceInterface // nil: only List and Watch are served
	lw                         *memLW
}

func (r metaResource) Namespace(string) metadata.ResourceInterface { return r }

func (r metaResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	obj, err := r.lw.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return obj.(*metav1.PartialObjectMetadataList), nil
}

func (r metaResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return r.lw.WatchWithContext(ctx, opts)
}

// The pages decode, as the metadata client decodes them, into
// PartialObjectMetadata with everything the Pods' metadata holds; and
// both packages' informers sync from them (a small size, in process).
func TestMetaPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.json")
	const n = memPageSize + 7
	if err := writeMetaPages(path, n); err != nil {
		t.Fatal(err)
	}
	pages, err := openMemPages(path)
	if err != nil {
		t.Fatal(err)
	}
	defer pages.close()
	if len(pages.offs) != 2 {
		t.Fatalf("%d pages, want 2", len(pages.offs))
	}
	b, _ := pages.read(1)
	obj, _, err := metaDecoder().Decode(b, nil, &metav1.PartialObjectMetadataList{})
	if err != nil {
		t.Fatal(err)
	}
	l := obj.(*metav1.PartialObjectMetadataList)
	p := memPod(memInitial, n, n-1)
	if len(l.Items) != 7 || l.Items[6].Name != p.Name || len(l.Items[6].ManagedFields) == 0 || len(l.Items[6].OwnerReferences) != len(p.OwnerReferences) {
		t.Fatalf("page 2 decodes to %d items, the last %+v", len(l.Items), l.Items[len(l.Items)-1].ObjectMeta)
	}
	if l.Continue != "" || ptr.Deref(l.RemainingItemCount, 0) != 0 {
		t.Fatalf("the last page continues: %q", l.Continue)
	}
	for _, impl := range memImplOrder {
		lw := newMemLW(metaCodec(), pages)
		r, err := startMemRun(t.Context(), lw, func(clientgocache.ListerWatcher) clientgocache.SharedIndexInformer {
			return metaImpls[impl](metaClient{lw})
		})
		if err != nil {
			t.Fatal(err)
		}
		err = r.waitSynced(n)
		if err == nil {
			err = checkMetaSynced(r.inf.GetStore(), n)
		}
		r.stop()
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
	}
}
