// Package tools is a package no spec is built from.
package tools

// Tool does nothing of interest.
func Tool() int {
	return 1
}
