// Package clihint says how to get the kubeharness command that the
// library's messages name (`kubeharness bins use …`): go install at the
// version of the harness module the running program was built with, so
// that the command and the library agree.
package clihint

import (
	"runtime/debug"
	"sync"
)

// module is the harness module; Path is the kubeharness command's package.
const (
	module = "github.com/kubeharness/kubeharness/harness"
	Path   = module + "/cmd/kubeharness"
)

// Get is how to get kubeharness, for a message that names it:
// "get kubeharness with `go install …/cmd/kubeharness@VERSION` (or go get
// -tool it and run go tool kubeharness)", VERSION the harness module's in
// this program's build, else latest.
func Get() string {
	v := version()
	return "get kubeharness with `go install " + Path + "@" + v + "` (or `go get -tool " + Path + "@" + v + "` and run it as `go tool kubeharness`)"
}

var version = sync.OnceValue(func() string { return versionIn(debug.ReadBuildInfo()) })

// versionIn is the harness module's version in a build: "latest" where
// the build does not say (no build information, a development build, a
// replaced module).
func versionIn(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "latest"
	}
	mods := append([]*debug.Module{&info.Main}, info.Deps...)
	for _, m := range mods {
		if m == nil || m.Path != module {
			continue
		}
		// A module replaced (by a directory, a fork) has no version of
		// this module's own to name.
		if m.Replace != nil || m.Version == "" || m.Version == "(devel)" {
			return "latest"
		}
		return m.Version
	}
	return "latest"
}
