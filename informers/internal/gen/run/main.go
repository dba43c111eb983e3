// Command run writes informers/zz_generated.go from the k8s.io/client-go
// this module requires; `go generate ./informers` runs it from that
// directory.
package main

import (
	"fmt"
	"os"

	"github.com/kreflector/cache/informers/internal/gen"
)

func main() {
	dir, err := gen.ClientGoDir()
	if err == nil {
		var src []byte
		if src, err = gen.Generate(dir); err == nil {
			err = os.WriteFile("zz_generated.go", src, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "informers generator:", err)
		os.Exit(1)
	}
}
