// Package overcommit implements the mutating webhook that scales the CPU
// and memory a Node reports as allocatable by an overcommit ratio.
package overcommit
