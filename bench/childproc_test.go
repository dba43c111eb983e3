package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// runChildProcess runs this test binary again as one child process that
// runs test alone, with env added to this process's environment, and
// returns the result the child printed as one JSON line after prefix.
// name and spec (the child's configuration) word the errors.
func runChildProcess[R any](name, test, prefix string, spec []byte, env ...string) (*R, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.timeout=1h", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s child %s: %w\n%s", name, spec, err, out.String())
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			var res R
			err := json.Unmarshal([]byte(line), &res)
			return &res, err
		}
	}
	return nil, fmt.Errorf("%s child %s printed no result:\n%s", name, spec, out.String())
}
