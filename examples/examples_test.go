// Package examples_test runs the example programs as CI does and checks
// how a successful run ends.
package examples_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// errorLine matches a klog line at error level: "E" and the date.
var errorLine = regexp.MustCompile(`(?m)^E\d{4} `)

// Each example, with CI's flags (the watch one shorter), exits 0 and its
// output, stdout and stderr together, ends on one line starting "OK: "
// with no line logged at error level on the way, having printed what it
// must (see says). The examples are built
// once and run side by side, so the whole takes about as long as the
// slowest (the elastic one, about 20 s).
func TestExamplesEndOnSuccess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the five example programs")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the examples with")
	}
	bin := t.TempDir()
	build := exec.Command(goTool, "build", "-o", bin+string(filepath.Separator), "./watch", "./informer", "./sharded", "./metrics", "./elastic")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the examples: %v\n%s", err, out)
	}
	runs := map[string][]string{
		"watch":    {"--duration", "3s", "--fault-rate", "3"},
		"informer": {"--duration", "20s"},
		"sharded":  nil,
		"metrics":  {"--duration", "3s", "--listen", "127.0.0.1:0"},
		"elastic":  nil,
	}
	// What an example must print on the way: the elastic one's replica
	// whose Leases are forbidden says so where a user prints its health.
	says := map[string][]string{
		"elastic": {"fmt.Println(inf.Health()): unhealthy: reflector Syncing; held back: ring not formed", "leases.coordination.k8s.io is forbidden"},
	}
	for name, args := range runs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var out bytes.Buffer
			cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, out.String())
			}
			text := strings.TrimRight(out.String(), "\n")
			if bad := errorLine.FindAllString(text, -1); len(bad) > 0 {
				t.Errorf("%s logged %d line(s) at error level:\n%s", name, len(bad), text)
			}
			for _, want := range says[name] {
				if !strings.Contains(text, want) {
					t.Errorf("%s did not print %q:\n%s", name, want, text)
				}
			}
			last := text[strings.LastIndexByte(text, '\n')+1:]
			if !strings.HasPrefix(last, "OK: ") || strings.Count(text, "\nOK: ") > 1 {
				t.Errorf("%s ended on %q, want one success line starting \"OK: \":\n%s", name, last, text)
			}
		})
	}
}
