package repo

import (
	"fmt"

	"github.com/kubeharness/kubeharness/harness/binaries"
)

// Root walks up from the working directory to the directory holding
// versions.yaml and go.mod (binaries.ProjectRoot).
func Root() (string, error) {
	root, err := binaries.ProjectRoot()
	if err != nil {
		return "", fmt.Errorf("%w: run from inside the kubeharness repository", err)
	}
	return root, nil
}
