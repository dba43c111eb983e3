// Package gztest makes gzip bodies as kube-apiserver compresses them, and
// damaged copies of them at every position class, for tests.
package gztest

import (
	"bytes"
	"compress/gzip"
	"fmt"
)

// Gzip is data compressed as one gzip member at level 1 (gzip.BestSpeed),
// kube-apiserver's level.
func Gzip(data []byte) []byte {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if err != nil {
		panic(err)
	}
	w.Write(data) // a bytes.Buffer does not fail
	w.Close()
	return b.Bytes()
}

// Damage is a damaged copy of a gzip body and where it was damaged.
type Damage struct {
	Name string
	Body []byte
}

// header, trailer: a member's fixed header (ID1 ID2 CM FLG MTIME XFL OS)
// and its trailer (CRC-32, ISIZE), in bytes.
const (
	header  = 10
	trailer = 8
)

// Damaged returns copies of gz, a gzip member longer than 40 bytes, each
// damaged once: a byte inverted, and the body cut before it, at every
// position class (header bytes; the first, middle and last bytes of the
// compressed data; each byte of the CRC-32 and of the length), the data
// without its trailer, and a member followed by bytes that are not
// another. The cases, and their names, are the same for every gz: the
// positions are named by their role.
func Damaged(gz []byte) []Damage {
	if len(gz) <= 40 {
		panic("gztest: Damaged needs a member longer than 40 bytes")
	}
	n := len(gz)
	type pos struct {
		name string
		i    int
	}
	var at []pos
	for _, i := range []int{0, 1, 2, 3, 4, 7, 8, 9} {
		at = append(at, pos{fmt.Sprintf("header byte %d", i), i})
	}
	at = append(at, pos{"data's first byte", header}, pos{"data's second byte", header + 1},
		pos{"data's middle byte", n / 2}, pos{"data's last byte", n - trailer - 1})
	for i := range 4 {
		at = append(at, pos{fmt.Sprintf("crc byte %d", i), n - trailer + i}, pos{fmt.Sprintf("length byte %d", i), n - 4 + i})
	}
	var out []Damage
	for _, p := range at {
		b := bytes.Clone(gz)
		b[p.i] ^= 0xff
		out = append(out, Damage{p.name + " inverted", b})
		out = append(out, Damage{"cut before the " + p.name, bytes.Clone(gz[:p.i])})
	}
	out = append(out, Damage{"data cut at its end, no trailer", bytes.Clone(gz[:n-trailer])})
	out = append(out, Damage{"trailing bytes", append(bytes.Clone(gz), "not gzip"...)})
	return out
}
