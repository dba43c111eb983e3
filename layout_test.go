package cache_test

import (
	"io/fs"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// goFileInMap is a Go file's path as docs/layout.md writes it: in
// backticks, from the repository root; a path with * in it is a pattern
// (path.Match) for generated files, each * one path element or part of
// one.
var goFileInMap = regexp.MustCompile("`([A-Za-z0-9_.*/-]+\\.go)`")

// TestLayoutListsEveryFile holds docs/layout.md to the tree: every Go file
// of the repository is listed exactly once (by its path or by one
// pattern), and every path listed exists and every pattern matches.
func TestLayoutListsEveryFile(t *testing.T) {
	doc, err := os.ReadFile("docs/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int{}
	for _, m := range goFileInMap.FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]]++
	}
	patterns := map[string]int{}
	for p, n := range listed {
		if strings.Contains(p, "*") {
			patterns[p] = n
			delete(listed, p)
		}
	}
	var problems []string
	matched := map[string]bool{}
	for _, path := range goFiles(t, ".") {
		for p, n := range patterns {
			if ok, _ := pathpkg.Match(p, path); ok {
				listed[path] += n
				matched[p] = true
			}
		}
		switch listed[path] {
		case 0:
			problems = append(problems, path+": not in docs/layout.md")
		case 1:
		default:
			problems = append(problems, path+": listed more than once")
		}
		delete(listed, path)
	}
	for path := range listed {
		problems = append(problems, path+": listed, but there is no such file")
	}
	for p := range patterns {
		if !matched[p] {
			problems = append(problems, p+": listed, but no file matches")
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Errorf("docs/layout.md does not match the tree:\n%s", strings.Join(problems, "\n"))
	}
}

// goFiles lists the Go files under root, skipping hidden directories (.git,
// .cache) and testdata.
func goFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			out = append(out, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
