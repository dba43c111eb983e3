package bench

import (
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kreflector/cache/internal/protometa"
)

// The page server's WatchLists: the current version's Pods as a protobuf
// WatchList's initial events, taken item by item from the page files into
// buffers made once, before the informer starts (so that they are in the
// measured process's base, not in its peaks), then the
// initial-events-end bookmark; the watch then stays open as any other.

// watchListBufs are the server's buffers for streaming a WatchList: a
// page as read, and one frame; one WatchList streams at a time.
type watchListBufs struct {
	mu          sync.Mutex
	page, frame []byte
}

// unknownHead is the start of the runtime.Unknown around every Pod: its
// typeMeta (apiVersion v1, kind Pod).
var unknownHead = appendField(nil, 1, appendField(appendField(nil, 1, []byte("v1")), 2, []byte("Pod")))

// newWatchListBufs makes buffers for the largest page of pages.
func newWatchListBufs(pages [memVersions]*memPages) *watchListBufs {
	most := 0
	for _, p := range pages {
		for _, n := range p.lens {
			most = max(most, n)
		}
	}
	return &watchListBufs{page: make([]byte, most), frame: make([]byte, 0, 1<<20)}
}

// streamInitial writes version v's Pods as ADDED frames and the bookmark
// at listRV.
func (b *watchListBufs) streamInitial(w http.ResponseWriter, p *memPages, listRV int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range p.offs {
		page := b.page[:p.lens[i]]
		if _, err := p.f.ReadAt(page, p.offs[i]); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		items, err := podListItems(page)
		if err != nil {
			return err
		}
		for _, item := range items {
			if err := b.writeFrame(w, "ADDED", item); err != nil {
				return err
			}
		}
	}
	end := appendField(nil, 6, []byte(strconv.Itoa(listRV))) // ObjectMeta.resourceVersion
	ann := appendField(appendField(nil, 1, []byte(metav1.InitialEventsAnnotationKey)), 2, []byte("true"))
	end = appendField(end, 12, ann) // ObjectMeta.annotations
	return b.writeFrame(w, "BOOKMARK", appendField(nil, 1, end))
}

// writeFrame writes a length-prefixed protobuf WatchEvent of type typ
// whose object is pod, a Pod's bytes, wrapped as the protobuf serializer
// wraps an object (magic, runtime.Unknown with apiVersion v1, kind Pod).
func (b *watchListBufs) writeFrame(w io.Writer, typ string, pod []byte) error {
	unknownLen := len(unknownHead) + fieldLen(2, len(pod))
	rawLen := 4 + unknownLen
	extLen := fieldLen(1, rawLen)
	f := b.frame[:4]
	f = appendField(f, 1, []byte(typ))
	f = appendTag(f, 2, extLen)
	f = appendTag(f, 1, rawLen)
	f = append(f, 'k', '8', 's', 0)
	f = append(f, unknownHead...)
	f = appendTag(f, 2, len(pod))
	f = append(f, pod...)
	binary.BigEndian.PutUint32(f[:4], uint32(len(f)-4))
	b.frame = f[:0]
	_, err := w.Write(f)
	return err
}

// podListItems returns the items of page, a protobuf PodList as the
// serializer writes it (magic, Unknown whose raw is the list): the bytes
// of each Pod, aliasing page.
func podListItems(page []byte) ([][]byte, error) {
	if len(page) < 4 || string(page[:4]) != "k8s\x00" {
		return nil, errors.New("relistpeak: a page without the protobuf magic")
	}
	raw, ok := fieldOf(page[4:], 2)
	if !ok {
		return nil, errors.New("relistpeak: a page without its list")
	}
	var items [][]byte
	for rest := raw; len(rest) > 0; {
		num, body, next, ok := nextField(rest)
		if !ok {
			return nil, errors.New("relistpeak: a list that does not parse")
		}
		if num == 2 {
			items = append(items, body)
		}
		rest = next
	}
	return items, nil
}

// fieldOf returns the last length-delimited field num of msg.
func fieldOf(msg []byte, num int) (body []byte, found bool) {
	for len(msg) > 0 {
		n, b, next, ok := nextField(msg)
		if !ok {
			return nil, false
		}
		if n == num {
			body, found = b, true
		}
		msg = next
	}
	return body, found
}

// nextField reads one length-delimited field of msg.
func nextField(msg []byte) (num int, body, rest []byte, ok bool) {
	tag, n := binary.Uvarint(msg)
	if n <= 0 || tag&7 != 2 {
		return 0, nil, nil, false
	}
	size, m, ok := protometa.Varint(msg, n)
	if !ok || uint64(len(msg)-m) < size {
		return 0, nil, nil, false
	}
	return int(tag >> 3), msg[m : m+int(size)], msg[m+int(size):], true
}

func appendTag(b []byte, num, size int) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	return binary.AppendUvarint(b, uint64(size))
}

func appendField(b []byte, num int, body []byte) []byte {
	return append(appendTag(b, num, len(body)), body...)
}

// fieldLen is the encoded length of a length-delimited field num of size
// bytes.
func fieldLen(num, size int) int {
	return len(appendTag(nil, num, size)) + size
}
