// Package store is the on-disk store of control-plane binaries, laid out as
// setup-envtest lays out its own: <bin-dir>/k8s/<version>-<os>-<arch>/, one
// directory per Kubernetes version and platform, and <bin-dir>/k8s/.src/
// for the build modules the Go module build generates.
//
// By file: store.go is the layout, where the default store is, listing
// and cleanup; trust.go refuses a store, or what is in it, that others
// than the caller and root could have written (one rule, the harness's
// ownership.CheckRun, and the store's own check for what is written into
// it); origin.go records how each binary came into the store (downloaded
// or built, from where, its sha512) and describes a directory by those
// records; lock_unix.go takes turns writing one binary and holds a partial
// download's lock, so that a later run removes only what a killed one
// left (partial.go); link.go hard-links (or copies) a binary from another
// store.
//
// The store decides nothing about where a missing binary comes from: that
// is a binaries.Source's business.
package store
