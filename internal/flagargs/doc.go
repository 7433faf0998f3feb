// Package flagargs turns a binary's options back into its command line,
// for a harness that runs the binary as a process: Args collects the
// settings that differ from their defaults as --name=value, and RoundTrip
// proves that the binary's own flag binding parses them back to the same
// options, naming any setting no flag carries. It also holds Election, the
// leader-election settings, flags and check the manager and the
// VirtualMachine controller share.
package flagargs
