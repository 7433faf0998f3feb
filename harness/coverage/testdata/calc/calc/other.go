package calc

// Mul multiplies.
func Mul(a, b int) int {
	return a * b
}
