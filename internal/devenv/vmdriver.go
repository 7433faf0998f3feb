package devenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// vmDriverChoice is the VirtualMachine controller's driver and why.
type vmDriverChoice struct {
	name string
	// why is "<name>: <reason>".
	why string
	// detail, when set, is what the Docker daemon answered, or failed to.
	detail error
}

// chooseVMDriver chooses the VirtualMachine controller's driver: asked is
// --vm-driver, which wins over $VM_DRIVER; without either, docker when a
// Docker daemon answers (DOCKER_HOST, DOCKER_TLS_VERIFY and
// DOCKER_CERT_PATH as the Docker CLI reads them), fake otherwise.
func chooseVMDriver(ctx context.Context, asked string) (vmDriverChoice, error) {
	source := "--vm-driver"
	if asked == "" {
		asked, source = os.Getenv(operatortest.VMDriverEnv), operatortest.VMDriverEnv
	}
	if asked != "" {
		if !driver.Known(asked) {
			return vmDriverChoice{}, fmt.Errorf("%s=%s: choose one of %s", source, asked, strings.Join(driver.Names(), ", "))
		}
		c := vmDriverChoice{name: asked, why: fmt.Sprintf("%s: %s=%s", asked, source, asked)}
		if asked == driver.DockerDriverName {
			if host, err := vmfixture.PingDocker(ctx); err != nil {
				c.why += fmt.Sprintf(", although no Docker daemon answers at %s yet", host)
				c.detail = err
			}
		}
		return c, nil
	}
	host, err := vmfixture.PingDocker(ctx)
	if err != nil {
		return vmDriverChoice{name: driver.FakeDriverName, detail: err,
			why: fmt.Sprintf("fake: no Docker daemon answers at %s; set %s=docker to insist", host, operatortest.VMDriverEnv)}, nil
	}
	return vmDriverChoice{name: driver.DockerDriverName, why: fmt.Sprintf("docker: the daemon at %s answers", host)}, nil
}

// print writes the choice as env up reports it.
func (c vmDriverChoice) print(w io.Writer) {
	fmt.Fprintf(w, "VirtualMachine driver %s\n", c.why)
	if c.detail != nil {
		fmt.Fprintf(w, "  (%v)\n", c.detail)
	}
}
