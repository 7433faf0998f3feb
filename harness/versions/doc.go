// Package versions says what a Kubernetes version is and how a request for
// one is resolved: a Version is a release (1.37.1), parsed once; a Selector
// is what a user asked for (a patch, a minor for its newest patch, or
// versions.yaml's default) and where they asked it ($K8S_VERSION, a flag, an
// argument, versions.yaml); a Lockfile is versions.yaml, the versions a
// project is tested on; and a Resolver turns a Selector into a Version that
// can be built, asking the Go module proxy (through a Proxy) which patches
// of a minor it serves.
//
// Only the edges see a version as text: Parse, ParseSelector, FromEnv,
// FromCommandLine, UnmarshalText and LoadLockfile read one, once; String
// and MarshalText write one.
package versions
