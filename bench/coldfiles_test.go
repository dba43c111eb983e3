package bench

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/internal/podgen"
)

// The cold-start benchmark's answers (coldstart_test.go), encoded once
// into files under .cache/coldstart at the repository root and served as
// bytes, so that the server costs little more than a copy: for n Pods
// and each encoding, the pages of a paginated LIST, the LIST answered
// whole, and the WatchList stream (every Pod as an ADDED event, then the
// initial-events-end bookmark). Lists are put together from each Pod's
// encoding, so that a list of 100,000 Pods is never held in memory.

// coldPageSize is the page size served: client-go's default and ours.
const coldPageSize = 500

// The files of one collection and encoding.
const (
	coldPages  = "pages"     // length-prefixed pages, as writePages writes them
	coldWhole  = "whole"     // one LIST response
	coldStream = "watchlist" // one WatchList response body
)

// coldFormat names the files' format; change it to have them rewritten.
const coldFormat = "v1"

// coldListRV is the collection's resourceVersion; Pod i is at
// coldListRV(n)-n+i.
func coldListRV(n int) int { return 1000 + n }

func coldPath(dir string, n int, encoding, kind string) string {
	return filepath.Join(dir, fmt.Sprintf("pods-%s-%d.%s.%s", coldFormat, n, encoding, kind))
}

// coldDir is .cache/coldstart beside .cache/membench.
func coldDir() (string, error) {
	dir, err := memPagesDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(dir), "coldstart"), nil
}

// coldCodec lays out lists and watch events in one encoding.
type coldCodec struct {
	protobuf bool
	enc      apiruntime.Encoder
}

func newColdCodec(encoding string) coldCodec {
	enc, _ := podgen.Codec(encoding)
	return coldCodec{protobuf: encoding == "protobuf", enc: enc}
}

// item is Pod p as an item of a list, framed: a JSON item after the
// first is preceded by a comma; a protobuf item is field 2 of a PodList.
// Items carry no kind, as kube-apiserver's do not.
func (c coldCodec) item(p *corev1.Pod, first bool) ([]byte, error) {
	if c.protobuf {
		b, err := p.Marshal() // the protobuf Pod has no kind
		return protoField(2, b), err
	}
	bare := *p
	bare.TypeMeta = metav1.TypeMeta{}
	b, err := c.encode(&bare)
	if !first {
		b = append([]byte{','}, b...)
	}
	return b, err
}

// encode is obj as the serializer writes it (a JSON document without its
// newline; a protobuf object in its envelope).
func (c coldCodec) encode(obj apiruntime.Object) ([]byte, error) {
	var buf bytes.Buffer
	if err := c.enc.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// listHead and listTail surround a PodList's items, itemsLen bytes of
// them as item framed them.
func (c coldCodec) listHead(meta metav1.ListMeta, itemsLen int) ([]byte, error) {
	if !c.protobuf {
		m, err := json.Marshal(meta)
		return []byte(`{"kind":"PodList","apiVersion":"v1","metadata":` + string(m) + `,"items":[`), err
	}
	m, err := meta.Marshal()
	if err != nil {
		return nil, err
	}
	tm, err := (&apiruntime.TypeMeta{APIVersion: "v1", Kind: "PodList"}).Marshal()
	if err != nil {
		return nil, err
	}
	// The envelope (runtime.Unknown): its type, then its raw bytes, the
	// PodList: metadata (field 1), then the items (field 2).
	metaField := protoField(1, m)
	head := append([]byte("k8s\x00"), protoField(1, tm)...)
	head = append(head, 0x12)
	head = binary.AppendUvarint(head, uint64(len(metaField)+itemsLen))
	return append(head, metaField...), nil
}

func (c coldCodec) listTail() []byte {
	if c.protobuf {
		return nil
	}
	return []byte("]}\n")
}

// event is a watch event of obj, framed as a watch response body frames
// it: a JSON document and a newline, or a length-prefixed protobuf
// metav1.WatchEvent.
func (c coldCodec) event(typ string, obj apiruntime.Object) ([]byte, error) {
	raw, err := c.encode(obj)
	if err != nil {
		return nil, err
	}
	if !c.protobuf {
		return []byte(`{"type":"` + typ + `","object":` + string(raw) + "}\n"), nil
	}
	b, err := (&metav1.WatchEvent{Type: typ, Object: apiruntime.RawExtension{Raw: raw}}).Marshal()
	if err != nil {
		return nil, err
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...), nil
}

// protoField is a length-delimited protobuf field.
func protoField(num int, b []byte) []byte {
	out := binary.AppendUvarint([]byte{byte(num<<3 | 2)}, uint64(len(b)))
	return append(out, b...)
}

// coldPod is Pod i of n, with its kind set (as a watch event carries it).
func coldPod(i, n int) *corev1.Pod {
	p := podgen.Pod(i, coldListRV(n)-n+i)
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	return p
}

// coldBookmark is the WatchList's last event's object.
func coldBookmark(n int) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: strconv.Itoa(coldListRV(n)),
			Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		},
	}
}

// writeColdFiles writes the files of n Pods in encoding under dir, unless
// they are there already.
func writeColdFiles(dir string, n int, encoding string) error {
	missing := false
	for _, kind := range []string{coldPages, coldWhole, coldStream} {
		if _, err := os.Stat(coldPath(dir, n, encoding, kind)); err != nil {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	w := &coldWriter{c: newColdCodec(encoding), n: n}
	defer w.cleanup()
	for _, kind := range []string{coldPages, coldStream, "items"} {
		if err := w.create(kind, coldPath(dir, n, encoding, kind)); err != nil {
			return err
		}
	}
	for i := range n {
		if err := w.add(coldPod(i, n), i); err != nil {
			return err
		}
	}
	return w.finish(coldPath(dir, n, encoding, coldWhole))
}

// coldWriter writes the files in one pass over the Pods: the pages and
// the stream as it goes, the whole list's items to a file of their own,
// to be put in the list once their length is known.
type coldWriter struct {
	c        coldCodec
	n        int
	files    map[string]*coldFile
	page     bytes.Buffer // the current page's items
	itemsLen int          // the whole list's items so far
}

// coldFile is a file being written under a temporary name.
type coldFile struct {
	f           *os.File
	w           *bufio.Writer
	tmp, target string
}

func (w *coldWriter) create(kind, target string) error {
	f, err := os.Create(target + ".tmp")
	if err != nil {
		return err
	}
	if w.files == nil {
		w.files = map[string]*coldFile{}
	}
	w.files[kind] = &coldFile{f: f, w: bufio.NewWriterSize(f, 1<<20), tmp: target + ".tmp", target: target}
	return nil
}

// add writes Pod p, the i-th, to the list's items, its page and the
// stream.
func (w *coldWriter) add(p *corev1.Pod, i int) error {
	item, err := w.c.item(p, i == 0)
	if err != nil {
		return err
	}
	_, _ = w.files["items"].w.Write(item)
	w.itemsLen += len(item)
	if i%coldPageSize == 0 && i > 0 && !w.c.protobuf {
		item = item[1:] // a page's first item has no comma before it
	}
	w.page.Write(item)
	if (i+1)%coldPageSize == 0 || i == w.n-1 {
		if err := w.endPage(i + 1); err != nil {
			return err
		}
	}
	ev, err := w.c.event("ADDED", p)
	_, _ = w.files[coldStream].w.Write(ev)
	return err
}

// endPage writes the page that ends before Pod end.
func (w *coldWriter) endPage(end int) error {
	meta := metav1.ListMeta{ResourceVersion: strconv.Itoa(coldListRV(w.n))}
	if end < w.n {
		meta.Continue = "page-" + strconv.Itoa(end/coldPageSize)
		meta.RemainingItemCount = ptr.To(int64(w.n - end))
	}
	head, err := w.c.listHead(meta, w.page.Len())
	if err != nil {
		return err
	}
	tail := w.c.listTail()
	pw := w.files[coldPages].w
	_ = binary.Write(pw, binary.LittleEndian, uint64(len(head)+w.page.Len()+len(tail)))
	_, _ = pw.Write(head)
	_, _ = pw.Write(w.page.Bytes())
	_, _ = pw.Write(tail)
	w.page.Reset()
	return nil
}

// finish ends the stream with the bookmark, writes the whole list to
// whole, and gives every file its name.
func (w *coldWriter) finish(whole string) error {
	ev, err := w.c.event("BOOKMARK", coldBookmark(w.n))
	if err != nil {
		return err
	}
	_, _ = w.files[coldStream].w.Write(ev)
	if err := w.create(coldWhole, whole); err != nil {
		return err
	}
	head, err := w.c.listHead(metav1.ListMeta{ResourceVersion: strconv.Itoa(coldListRV(w.n))}, w.itemsLen)
	if err != nil {
		return err
	}
	items, out := w.files["items"], w.files[coldWhole]
	_, _ = out.w.Write(head)
	if err := items.w.Flush(); err != nil {
		return err
	}
	if _, err := items.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.Copy(out.w, items.f); err != nil {
		return err
	}
	_, _ = out.w.Write(w.c.listTail())
	for _, kind := range []string{coldPages, coldStream, coldWhole} {
		if err := w.files[kind].close(); err != nil {
			return err
		}
	}
	return nil
}

// close flushes and closes the file and gives it its name.
func (f *coldFile) close() error {
	err := f.w.Flush()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.tmp, f.target)
	}
	return err
}

// cleanup removes what is left under temporary names.
func (w *coldWriter) cleanup() {
	for _, f := range w.files {
		f.f.Close()
		os.Remove(f.tmp)
	}
}
