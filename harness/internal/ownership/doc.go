// Package ownership answers who else may write what a harness package is
// about to trust: whether a group is one only its user belongs to, the
// private group Debian and Ubuntu give each user (with a umask of 002), whose
// write bit lets no one else in. The binaries store and the etcd template
// cache apply the same rule through it.
package ownership
