package gen

import (
	"io/fs"
	"path/filepath"
	"sort"
)

// Stale lists the generated files under dir (informers/: files named
// Generated or GeneratedTest) that files, Generate's output, does not
// have, by slash-separated path relative to dir: what a client-go
// without some package leaves behind.
func Stale(dir string, files map[string][]byte) ([]string, error) {
	var stale []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Name() != Generated && d.Name() != GeneratedTest {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			stale = append(stale, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(stale)
	return stale, err
}
