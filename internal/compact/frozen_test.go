package compact

import (
	"testing"
	"unsafe"
)

func TestFrozenSharesTheBytes(t *testing.T) {
	b := []byte("a record's bytes")
	f := Freeze(b)
	if string(f) != "a record's bytes" || unsafe.StringData(string(f)) != &b[0] {
		t.Fatalf("Freeze copied or changed the bytes: %q", f)
	}
	if back := f.Bytes(); &back[0] != &b[0] || len(back) != len(b) {
		t.Fatal("Bytes copied the bytes")
	}
	if Freeze(nil) != "" || len(Frozen("").Bytes()) != 0 {
		t.Fatal("no bytes did not freeze to none")
	}
	if unsafe.Sizeof(Frozen("")) != 2*unsafe.Sizeof(uintptr(0)) {
		t.Fatal("Frozen is not two words")
	}
}
