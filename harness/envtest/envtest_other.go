//go:build !unix

package envtest

import (
	"fmt"
	"os"
	"sync"
)

// whyStock is why Start is controller-runtime's envtest here, whatever the
// Environment says.
const whyStock = "the tuned control plane needs a Unix system (etcd on unix sockets in a 0700 directory; its processes stopped, paused and ended with the test process through process groups and signals)"

// saidWhyStock makes the first start that would have been tuned say so,
// once per test process.
var saidWhyStock sync.Once

// stockOnly reports whether Start must hand every start to
// controller-runtime's envtest on this system: yes, and the first time it
// says why on standard error.
func stockOnly() bool {
	saidWhyStock.Do(func() {
		fmt.Fprintf(os.Stderr, "envtest: %s; Start runs controller-runtime's envtest instead\n", whyStock)
	})
	return true
}

// openNoFollow is none: os.OpenFile has no such flag here.
const openNoFollow = 0
