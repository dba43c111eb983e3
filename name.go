package cache

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// ownPackage prefixes the function names of this package's frames.
const ownPackage = "github.com/kreflector/cache."

// callerName names a Reflector after the first caller outside this package
// (this package's own tests count as outside),
// as "dir/file.go:line", or "????" when the stack says nothing useful.
func callerName() string {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		inside := strings.HasPrefix(f.Function, ownPackage) && !strings.HasSuffix(f.File, "_test.go")
		if f.Function != "" && !inside {
			return fmt.Sprintf("%s/%s:%d", filepath.Base(filepath.Dir(f.File)), filepath.Base(f.File), f.Line)
		}
		if !more {
			return "????"
		}
	}
}
