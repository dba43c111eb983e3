package compact

import (
	"testing"

	"github.com/kreflector/cache/internal/podgen"
)

func BenchmarkZZEncode(b *testing.B) {
	p := podgen.Pod(7, 8)
	c := For(p)
	var buf []byte
	for b.Loop() {
		buf, _ = c.Encode(buf[:0], p)
	}
	b.ReportMetric(float64(len(buf)), "B")
}

func BenchmarkZZSqueeze(b *testing.B) {
	c := For(podgen.Pod(0, 1))
	s := NewSqueezer()
	for i := range 1000 {
		enc, _ := c.Encode(nil, podgen.Pod(i, i+1))
		s.Squeeze(enc)
	}
	enc, _ := c.Encode(nil, podgen.Pod(7, 8))
	var out []byte
	for b.Loop() {
		out = s.Squeeze(enc)
	}
	b.ReportMetric(float64(len(out)), "B")
}

func BenchmarkZZDecode(b *testing.B) {
	p := podgen.Pod(7, 8)
	c := For(p)
	enc, _ := c.Encode(nil, p)
	for b.Loop() {
		c.Decode(enc)
	}
}
