// Package flush makes the coverage counters of a binary built with
// go build -cover available while it runs, for a binary's main to call
// (Start) and a test to ask (Request): a controller manager's counters,
// spec by spec. It imports nothing but the standard library (and
// harness/internal/safefile, which imports nothing else), so that the
// binary it is built into gets nothing else with it; harness/coverage's
// RecordSpecs is what asks.
package flush
