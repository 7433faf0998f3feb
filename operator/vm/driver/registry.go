package driver

import (
	"fmt"
	"slices"
	"strings"
)

// Names of the drivers ForName builds.
const (
	DockerDriverName = "docker"
	FakeDriverName   = "fake"
)

// Option configures the driver ForName builds.
type Option func(*options)

type options struct {
	docker DockerOptions
}

// WithDockerOptions configures the "docker" driver; without it, the driver
// reads the environment as the Docker CLI does (see DockerOptions).
func WithDockerOptions(o DockerOptions) Option {
	return func(opts *options) { opts.docker = o }
}

// Names returns the names ForName accepts, for a flag's help text.
func Names() []string {
	return []string{DockerDriverName, FakeDriverName}
}

// Known reports whether ForName knows name.
func Known(name string) bool {
	return slices.Contains(Names(), name)
}

// ForName builds the driver called name ("docker" or "fake"), e.g. from a
// --vm-driver flag. The docker driver does not contact the daemon here; a
// caller that wants to fail early calls (*Docker).Ping.
func ForName(name string, opts ...Option) (Driver, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	switch name {
	case DockerDriverName:
		return NewDocker(o.docker)
	case FakeDriverName:
		return NewFake(), nil
	default:
		return nil, fmt.Errorf("unknown VM driver %q: want one of %s", name, strings.Join(Names(), ", "))
	}
}
