// Package bundle writes a failure bundle: what a person needs to debug one
// failed spec, written next to the test report. A Bundle names the spec's
// namespace, its time window and the JSON log files of the processes the
// suite runs; Write puts the namespace's objects, its events in time order
// and each log's lines from the spec's window into a directory that Dir
// names after the spec.
//
// A bundle holds no Secret's values: objects.yaml shows each Secret's keys
// with each value's length and the start of its SHA-256 (Sanitize), and
// leaves kubectl's last-applied-configuration annotation out of every
// object. Its directories are 0700 and its files 0600 whatever the umask,
// written without following a symbolic link planted in a file's place;
// a failures/ directory that another user owns or may write is refused
// (OpenDir). A log's excerpt is read from the end of a regular file only,
// its size bounded (LogWindow). Suites add files of their own with
// WriteFile.
//
// harness/suite writes one for every failed spec of a Ginkgo suite
// (suite.BundleFailures).
package bundle
