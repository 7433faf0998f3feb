//go:build !unix

package envtest

// stockOnly is why Start is controller-runtime's envtest here, whatever
// the Environment says.
const stockOnly = "the tuned control plane needs a Unix system: etcd listens on unix sockets in a 0700 directory, and its processes are stopped, paused and ended with the test process through process groups and signals"

// openNoFollow is none: os.OpenFile has no such flag here.
const openNoFollow = 0
