// Package calc is the code under test of the coverage package's tests.
package calc

import (
	_ "embed"
	"strings"
)

// Limit is the largest value Scale returns.
const Limit = 100

// step is what Scale multiplies by.
const step = 2

//go:embed notes.md
var notes string

// Notes are the package's notes.
func Notes() string { return strings.TrimSpace(notes) }

var ready bool

// Init readies the package; the suite calls it before any spec.
func Init() {
	ready = true
}

// Add adds.
func Add(a, b int) int {
	return a + b
}

// Scale scales x, up to Limit.
func Scale(x int) int {
	if x*step > Limit {
		return Limit
	}
	return x * step
}

// T is a type with a method.
type T struct{}

// Name names it.
func (T) Name() string { return "t" }
