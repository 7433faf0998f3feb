package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// versionInfo is what `kubeharness version` prints.
type versionInfo struct {
	Kubeharness buildInfo `json:"kubeharness"`
	Go          string    `json:"go"`
	Platform    string    `json:"platform"`
	Kubernetes  k8sInfo   `json:"kubernetes"`
}

// buildInfo is the kubeharness build: the main module's version and the
// commit it was built from, as the Go toolchain stamped them.
type buildInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// k8sInfo is the Kubernetes version versions.yaml pins as its default, or
// why it cannot be read (outside the repository).
type k8sInfo struct {
	Default  versions.Version `json:"default,omitzero"`
	Lockfile string           `json:"lockfile,omitempty"`
	Error    string           `json:"error,omitempty"`
}

// NewVersionCommand is `kubeharness version`.
func NewVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print the kubeharness, Go and default Kubernetes versions",
		Long: `Prints the kubeharness version and the commit it was built from, the Go
version it was built with, and the Kubernetes version versions.yaml pins as
the default in the project you are in (unavailable outside a project with a
versions.yaml beside its go.mod).`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "", "text", "json":
			default:
				return UsageErrorf("--output %q: want text or json", output)
			}
			return printVersion(cmd.OutOrStdout(), currentVersion(), output == "json")
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func currentVersion() versionInfo {
	v := versionInfo{
		Kubeharness: buildInfo{Version: "unknown"},
		Go:          runtime.Version(),
		Platform:    runtime.GOOS + "/" + runtime.GOARCH,
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			v.Kubeharness.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Kubeharness.Revision = s.Value
			case "vcs.time":
				v.Kubeharness.Time = s.Value
			case "vcs.modified":
				v.Kubeharness.Modified = s.Value == "true"
			}
		}
	}
	root, err := binaries.ProjectRoot()
	if err == nil {
		var lock *versions.Lockfile
		if lock, err = versions.LoadLockfile(root); err == nil {
			v.Kubernetes = k8sInfo{Default: lock.Default, Lockfile: filepath.Join(root, versions.LockfileName)}
		}
	}
	if err != nil {
		v.Kubernetes.Error = err.Error()
	}
	return v
}

func printVersion(w io.Writer, v versionInfo, asJSON bool) error {
	if asJSON {
		out, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(out))
		return err
	}
	revision := "unknown"
	if b := v.Kubeharness; b.Revision != "" {
		revision = b.Revision
		if b.Time != "" {
			revision += " (" + b.Time + ")"
		}
		if b.Modified {
			revision += ", modified"
		}
	}
	kube := "unavailable: " + v.Kubernetes.Error
	if v.Kubernetes.Error == "" {
		kube = v.Kubernetes.Default.String() + " (default in " + v.Kubernetes.Lockfile + ")"
	}
	_, err := fmt.Fprintf(w, "kubeharness: %s\nrevision:    %s\ngo:          %s %s\nkubernetes:  %s\n",
		v.Kubeharness.Version, revision, v.Go, v.Platform, kube)
	return err
}
