//go:build !unix

package ownership

// PrivateGroup is false where there are no Unix groups to read.
func PrivateGroup(uid, gid uint32) bool { return false }
