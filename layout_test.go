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

// goFileInMap is a Go file's path as docs/layout.md's tables write it: in
// backticks, from the repository root; a path with * in it is a pattern
// (path.Match) for generated files, each * one path element or part of
// one.
var goFileInMap = regexp.MustCompile("`([A-Za-z0-9_.*/-]+\\.go)`")

// packageInMap is a package directory as docs/layout.md's overview writes
// it in its diagrams: a path from the repository root ending in "/" (a *
// stands for one path element), after a space, a comma or the tree's
// lines.
var packageInMap = regexp.MustCompile(`(?:^|[\s,─])([a-z][a-z0-9_*-]*(?:/[a-z0-9_*-]+)*/)`)

// TestLayoutListsEveryFile holds docs/layout.md to the tree: every Go file
// of the repository is listed exactly once in its tables (by its path or
// by one pattern), and every path listed exists and every pattern
// matches; and every package directory (one holding Go files, the root
// aside) is shown in its overview's tree (its first diagram), and every
// directory its diagrams name exists and every pattern matches a package.
func TestLayoutListsEveryFile(t *testing.T) {
	doc, err := os.ReadFile("docs/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	files := goFiles(t, ".")
	problems := checkFiles(tableRows(string(doc)), files)
	tree, diagrams := overviewDiagrams(t, string(doc))
	problems = append(problems, checkPackages(tree, diagrams, files)...)
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Errorf("docs/layout.md does not match the tree:\n%s", strings.Join(problems, "\n"))
	}
}

// checkFiles checks that every one of files is listed once in rows.
func checkFiles(rows string, files []string) []string {
	listed := map[string]int{}
	for _, m := range goFileInMap.FindAllStringSubmatch(rows, -1) {
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
	for _, path := range files {
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
	return problems
}

// checkPackages checks that every package directory of files is shown in
// tree, and that every directory diagrams name exists (as a directory; a
// pattern must match a package).
func checkPackages(tree, diagrams string, files []string) []string {
	packages := map[string]bool{}
	for _, f := range files {
		if dir := pathpkg.Dir(f); dir != "." {
			packages[dir+"/"] = true
		}
	}
	var problems []string
	for _, m := range packageInMap.FindAllStringSubmatch(diagrams, -1) {
		p := m[1]
		if strings.Contains(p, "*") {
			if len(matching(p, packages)) == 0 {
				problems = append(problems, p+": in the overview, but no package matches")
			}
		} else if st, err := os.Stat(p); err != nil || !st.IsDir() {
			problems = append(problems, p+": in the overview, but there is no such directory")
		}
	}
	shown := map[string]bool{}
	for _, m := range packageInMap.FindAllStringSubmatch(tree, -1) {
		shown[m[1]] = true
		for _, pkg := range matching(m[1], packages) {
			shown[pkg] = true
		}
	}
	for pkg := range packages {
		if !shown[pkg] {
			problems = append(problems, pkg+": package not in docs/layout.md's overview")
		}
	}
	return problems
}

// matching returns the packages pattern p (a * standing for one path
// element) matches.
func matching(p string, packages map[string]bool) []string {
	var out []string
	for pkg := range packages {
		if ok, _ := pathpkg.Match(strings.TrimSuffix(p, "/"), strings.TrimSuffix(pkg, "/")); ok && strings.Contains(p, "*") {
			out = append(out, pkg)
		}
	}
	return out
}

// tableRows returns the lines of doc's tables.
func tableRows(doc string) string {
	var b strings.Builder
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(line, "|") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// overviewDiagrams returns the first fenced block of doc's "## Overview"
// section (the tree), and all of them.
func overviewDiagrams(t *testing.T, doc string) (tree, all string) {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## Overview\n")
	if !ok {
		t.Fatal(`docs/layout.md has no "## Overview" section`)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var b strings.Builder
	for i, block := range strings.Split(section, "```") {
		if i%2 == 1 {
			if i == 1 {
				tree = block
			}
			b.WriteString(block)
		}
	}
	return tree, b.String()
}

// commitHash is what a commit hash looks like: 7 to 40 hex digits, with
// at least one letter and one digit among them.
var commitHash = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)

// The README stays a front page: at most 250 lines, pointing to the map
// (docs/layout.md), with no issue numbers or commit hashes (history
// belongs to git and the pages under docs/).
func TestREADMEIsAFrontPage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	if n := strings.Count(text, "\n"); n > 250 {
		t.Errorf("README.md has %d lines, want at most 250", n)
	}
	if !strings.Contains(text, "(docs/layout.md)") {
		t.Error("README.md does not link to the map, docs/layout.md")
	}
	if m := regexp.MustCompile(`(?i)\bissues? #?[0-9]+`).FindString(text); m != "" {
		t.Errorf("README.md mentions an issue: %q", m)
	}
	for _, h := range commitHash.FindAllString(text, -1) {
		if strings.ContainsAny(h, "0123456789") && strings.ContainsAny(h, "abcdef") {
			t.Errorf("README.md mentions what looks like a commit hash: %q", h)
		}
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
