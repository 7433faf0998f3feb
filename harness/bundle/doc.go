// Package bundle writes a failure bundle: what a person needs to debug one
// failed spec, written next to the test report. A Bundle names the spec's
// namespace, its time window and the JSON log files of the processes the
// suite runs; Write puts the namespace's objects, its events in time order
// and each log's lines from the spec's window into a directory that Dir
// names after the spec.
//
// harness/suite writes one for every failed spec of a Ginkgo suite
// (suite.BundleFailures).
package bundle
