//go:build unix

package envtest

import "syscall"

// stockOnly reports whether Start must hand every start to
// controller-runtime's envtest on this system: no, it runs the tuned
// control plane here.
func stockOnly() bool { return false }

// openNoFollow has OpenFile refuse a symbolic link at the path's end.
const openNoFollow = syscall.O_NOFOLLOW
