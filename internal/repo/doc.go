// Package repo is what this repository's commands and suites know of the
// repository itself and the library leaves to them: its root (the
// directory below which they read config/, versions.yaml and bin/), the
// control plane of its binaries, its store with the build modules it keeps
// below hack/ (Store, BuildModules), and what its versions.yaml pins for
// its own tools (LoadLockfile: the CI lanes of each version, the offline
// kind node image's inputs) with the node components that image needs.
package repo
