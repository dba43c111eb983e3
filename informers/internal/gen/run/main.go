// Command run writes the generated files of informers (zz_generated.go in
// informers and in each package under it, and zz_generated_test.go) from
// the k8s.io/client-go this module requires, and removes the generated
// files it no longer writes; `go generate ./informers` runs it from that
// directory.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kreflector/cache/informers/internal/gen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "informers generator:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := gen.ClientGoDir()
	if err != nil {
		return err
	}
	files, err := gen.Generate(dir)
	if err != nil {
		return err
	}
	for rel, src := range files {
		path := filepath.FromSlash(rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, src, 0o644); err != nil {
			return err
		}
	}
	stale, err := gen.Stale(".", files)
	if err != nil {
		return err
	}
	for _, rel := range stale {
		path := filepath.FromSlash(rel)
		if err := os.Remove(path); err != nil {
			return err
		}
		// Directories left empty go too.
		for dir := filepath.Dir(path); dir != "."; dir = filepath.Dir(dir) {
			if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 || os.Remove(dir) != nil {
				break
			}
		}
	}
	return nil
}
