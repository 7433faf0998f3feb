// Package bench is `make bench`: it measures the harness and this
// repository's operator on real control planes (start, cycles, env,
// leader, suite, example and shards, one section each) and prints the
// figures docs/benchmarks.md quotes, progress to standard error. The
// generic parts live in the harness library; what is here measures this
// repository's operator or runs its suite.
package bench
