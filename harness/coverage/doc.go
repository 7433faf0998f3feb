// Package coverage records which code each spec of a Ginkgo suite made the
// processes under test run, and chooses from that record the specs a
// change needs.
//
// Each binary the suite starts that runs the code under test (a controller
// manager) is built with go build -cover -covermode=atomic, its main
// package among -coverpkg, and started with GOCOVERDIR set; its main makes
// one call:
//
//	stop, err := flush.Start(flush.Options{}) // harness/coverage/flush
//	...
//	defer stop()
//
// and the suite file one more:
//
//	var _ = coverage.RecordSpecs(coverage.Recording{Dir: func() string { return os.Getenv("SPEC_COVERAGE") }})
//
// Before each spec RecordSpecs asks every process registered in
// $GOCOVERDIR to write its counters and clear them; after the spec, to
// write them into the spec's directory. A record is laid out as
//
//	<dir>/specs/<id>/spec.json   the spec: full text, file:line (SpecInfo)
//	<dir>/specs/<id>/cov*        what the processes counted during the spec
//	<dir>/outside/cov*           counted outside any spec (suite setup)
//	<dir>/<any other>/cov*       counted outside any spec, too
//
// so records of several machines (shards) merge by copying their
// directories into one, and `go tool covdata` reads any of its directories.
//
// Attribution to a spec is exact when one spec at a time runs against the
// processes: a serial run (ginkgo without -p or --procs), or a process per
// Ginkgo process (Recording.PerProcess). What a process does between two
// specs (reconciling what the first one's cleanup deleted) counts to the
// spec before. The test process's own counters cannot be per spec: a go
// test binary computes its coverage meta-data at exit, and until then
// runtime/coverage writes none of its counters; written at exit into
// <dir>/outside (-test.gocoverdir), they count as reached by every spec.
//
// Load reads a record back (through `go tool covdata textfmt`), and
// Affected compares it with `git diff` since the commit the record was made
// at:
//
//	sel, err := coverage.Affected(ctx, coverage.Options{Since: "origin/main",
//		Record: "artifacts/coverage/specs", DryRun: dryRun, Packages: []string{"./e2e", "./cmd/manager"}})
//	args := sel.GinkgoArgs()                         // as a shard.Shard's
//	shards, err := shard.Pack(sel.Specs, timings, 3) // or split across machines
//
// It selects the specs whose recorded blocks hold a changed line, the specs
// in changed test files, the specs the record does not know, and every spec
// when a change is one coverage cannot see (see Affected).
package coverage
