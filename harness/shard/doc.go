// Package shard splits the specs of any Ginkgo suite across machines (a
// CI matrix) by the time each took in a previous run, so that the slowest
// machine finishes as early as it can, and tells Ginkgo which specs each
// machine runs.
//
//	specs := shard.Specs(dryRun)          // ginkgo --dry-run --json-report
//	timings := shard.Timings(lastRun)     // a previous run's --json-report
//	shards, err := shard.Pack(specs, timings, 3)
//	args := shards[k-1].GinkgoArgs()      // --focus-file=…: exactly shard k's specs
//
// The packing is deterministic: every machine of the matrix computes the
// same shards from the same inputs, with no coordinator. Specs of a Serial
// or Ordered container stay in one shard; specs the timings do not know
// count the median; without timings the split is by count.
package shard
