package bench

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kreflector/cache/internal/podgen"
)

// The memory benchmark's server side: the answers to a LIST of realistic
// Pods (internal/podgen), encoded once into a file of pages as an API
// server sends them, read and decoded afresh for every LIST. Holding the
// encoded pages in the heap would count them against the implementation
// under test; in a file they cost a read per page, like a response body.

// memPageSize is the page size the benchmark serves: client-go's default
// (and ours) for a paginated LIST.
const memPageSize = 500

// Versions of the collection a memory benchmark serves: the initial one,
// then after a 410 one in which every 20th Pod changed, then one in which
// every Pod changed.
const (
	memInitial = iota
	memFewChanged
	memAllChanged
	memVersions
)

// memListRV is the collection's resourceVersion at version v of n Pods;
// Pod i is at memListRV(v)-n+i+1 where it changed in v.
func memListRV(v, n int) int { return (v + 1) * 10 * n }

// memPodRV is the resourceVersion of Pod i at version v: it moves when
// the Pod changed in v (every 20th in memFewChanged, all in
// memAllChanged), and otherwise is the one of the latest version in which
// it changed.
func memPodRV(v, n, i int) int {
	switch {
	case v == memAllChanged:
		return memListRV(v, n) - n + i + 1
	case v == memFewChanged && i%20 == 0:
		return memListRV(v, n) - n + i + 1
	default:
		return memListRV(memInitial, n) - n + i + 1
	}
}

// memPod is Pod i of n at version v. A changed Pod has a new
// resourceVersion and a new restart annotation, as a rollout would give it.
func memPod(v, n, i int) *corev1.Pod {
	p := podgen.Pod(i, memPodRV(v, n, i))
	if memPodRV(v, n, i) != memPodRV(memInitial, n, i) {
		p.Annotations["kubectl.kubernetes.io/restartedAt"] = "2024-12-0" + strconv.Itoa(1+v) + "T08:00:00Z"
	}
	return p
}

// memPagesPath is where the pages of n Pods at version v in encoding
// live under dir.
func memPagesPath(dir string, n, v int, encoding string) string {
	return filepath.Join(dir, fmt.Sprintf("pods-%d-v%d.%s", n, v, encoding))
}

// writeMemPages writes the LIST answer for n Pods at version v to path,
// unless it is there already: each page a PodList with its continue token
// ("page-K" for page K) and remaining item count, prefixed by its length.
func writeMemPages(path string, n, v int, encoding string) error {
	enc, _ := podgen.Codec(encoding)
	return writePages(path, (n+memPageSize-1)/memPageSize, func(page int, w io.Writer) error {
		return enc.Encode(memPage(v, n, page), w)
	})
}

// writePages writes pages pages to path, unless it is there already,
// each as encode writes it, prefixed by its length.
func writePages(path string, pages int, encode func(page int, w io.Writer) error) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var buf bytes.Buffer
	for page := range pages {
		buf.Reset()
		if err := encode(page, &buf); err != nil {
			f.Close()
			return err
		}
		_ = binary.Write(w, binary.LittleEndian, uint64(buf.Len()))
		_, _ = w.Write(buf.Bytes())
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// memPage is page K of the LIST of n Pods at version v.
func memPage(v, n, page int) *corev1.PodList {
	start := page * memPageSize
	end := min(start+memPageSize, n)
	l := &corev1.PodList{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(memListRV(v, n))},
	}
	for i := start; i < end; i++ {
		l.Items = append(l.Items, *memPod(v, n, i))
	}
	if end < n {
		l.Continue = "page-" + strconv.Itoa(page+1)
		l.RemainingItemCount = ptr.To(int64(n - end))
	}
	return l
}

// memPages reads the pages of one file: their offsets are indexed once,
// and each read returns a fresh buffer, as a response body would be.
type memPages struct {
	f    *os.File
	offs []int64
	lens []int
}

func openMemPages(path string) (*memPages, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	p := &memPages{f: f}
	var off int64
	var hdr [8]byte
	for {
		if _, err := f.ReadAt(hdr[:], off); err == io.EOF {
			return p, nil
		} else if err != nil {
			f.Close()
			return nil, err
		}
		n := binary.LittleEndian.Uint64(hdr[:])
		p.offs, p.lens = append(p.offs, off+8), append(p.lens, int(n))
		off += 8 + int64(n)
	}
}

// read returns page k's bytes in a new buffer.
func (p *memPages) read(k int) ([]byte, error) {
	if k < 0 || k >= len(p.offs) {
		return nil, fmt.Errorf("membench: no page %d (of %d)", k, len(p.offs))
	}
	b := make([]byte, p.lens[k])
	_, err := p.f.ReadAt(b, p.offs[k])
	return b, err
}

func (p *memPages) close() { p.f.Close() }
