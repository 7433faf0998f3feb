//go:build !unix

package report

// openFlags are none where there are no named pipes to open (Windows).
const openFlags = 0
