package gen

import (
	"fmt"
	"os/exec"
	"strings"
)

// ClientGoDir asks the go command where the k8s.io/client-go module this
// module requires lives (the module cache, or a replace directive's
// directory).
func ClientGoDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", clientGoModule).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", clientGoModule, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: the module is not downloaded", clientGoModule)
	}
	return dir, nil
}
