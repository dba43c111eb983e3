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
// damaged once: a byte inverted, and the body cut, at every position class
// (each header byte; the first, middle and last bytes of the compressed
// data; each byte of the CRC-32 and of the length), and a member followed
// by bytes that are not another.
func Damaged(gz []byte) []Damage {
	if len(gz) <= 40 {
		panic("gztest: Damaged needs a member longer than 40 bytes")
	}
	n := len(gz)
	at := map[string][]int{
		"header": {0, 1, 2, 3, 4, 7, 8, 9},
		"data":   {header, header + 1, n / 2, n - trailer - 1},
		"crc":    {n - 8, n - 7, n - 6, n - 5},
		"length": {n - 4, n - 3, n - 2, n - 1},
	}
	var out []Damage
	for _, class := range []string{"header", "data", "crc", "length"} {
		for _, i := range at[class] {
			b := bytes.Clone(gz)
			b[i] ^= 0xff
			out = append(out, Damage{fmt.Sprintf("%s byte %d inverted", class, i), b})
			out = append(out, Damage{fmt.Sprintf("%s cut at %d", class, i), bytes.Clone(gz[:i])})
		}
	}
	out = append(out, Damage{"data cut at its end, no trailer", bytes.Clone(gz[:n-trailer])})
	out = append(out, Damage{"trailing bytes", append(bytes.Clone(gz), "not gzip"...)})
	return out
}
