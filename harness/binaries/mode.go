package binaries

import (
	"fmt"
	"os"
	"strings"
)

// Mode is where Build takes a missing binary that the official envtest
// archive holds (etcd, kube-apiserver, kubectl) from. Binaries the archive
// lacks (kube-controller-manager, the node components) are built in every
// mode.
type Mode string

const (
	// ModeAuto downloads the envtest archive and builds from the Go module
	// proxy when the download fails: the index cannot be reached or lacks
	// the version, or the archive does not match its sha512.
	ModeAuto Mode = "auto"
	// ModeDownload downloads the envtest archive and fails when that
	// fails.
	ModeDownload Mode = "download"
	// ModeBuild builds from the Go module proxy and contacts nothing else.
	ModeBuild Mode = "build"
)

// ModeEnv is the environment variable that sets the Mode of every Build
// whose Builder sets none; unset or empty is ModeAuto.
const ModeEnv = "KUBEHARNESS_BINARIES"

// ParseMode parses a Mode; empty is ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeDownload, ModeBuild:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q: want auto (download, else build from the Go module proxy), download or build", s)
}

// ModeFromEnv is the Mode $KUBEHARNESS_BINARIES asks for.
func ModeFromEnv() (Mode, error) {
	m, err := ParseMode(os.Getenv(ModeEnv))
	if err != nil {
		return "", fmt.Errorf("$%s: %w", ModeEnv, err)
	}
	return m, nil
}

// mode is the Builder's Mode, or else $KUBEHARNESS_BINARIES's.
func (b *Builder) mode() (Mode, error) {
	if b.Binaries == "" {
		return ModeFromEnv()
	}
	return ParseMode(string(b.Binaries))
}
