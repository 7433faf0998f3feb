package binaries

import (
	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/binaries/store"
)

// How a binary came into a store directory, as its Origin records it.
const (
	// OriginDownloaded is a binary taken from the official envtest archive.
	OriginDownloaded = store.OriginDownloaded
	// OriginBuilt is a binary built from the Go module proxy.
	OriginBuilt = store.OriginBuilt
)

// Origin is how a binary in a store directory came to be (store.Origin).
type Origin = store.Origin

// ReadOrigin returns the recorded Origin of the binary name in the store
// directory dir (store.ReadOrigin).
func ReadOrigin(dir, name string) (Origin, bool) { return store.ReadOrigin(dir, name) }

// DescribeOrigins says how the binaries the store directory dir holds came
// to be, by their Origin records (store.DescribeOrigins): the components
// the harness knows and any other binary with a record.
func DescribeOrigins(dir string) string {
	return store.DescribeOrigins(dir, componentNames(component.Known())...)
}
