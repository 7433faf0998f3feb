//go:build unix

package envtest

import "syscall"

// stockOnly is why Start hands every start to controller-runtime's
// envtest on this system; empty: it runs the tuned control plane here.
const stockOnly = ""

// openNoFollow has OpenFile refuse a symbolic link at the path's end.
const openNoFollow = syscall.O_NOFOLLOW
