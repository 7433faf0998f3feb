// Package bench is `make bench`: it measures the harness and this
// repository's operator on real control planes and prints the figures the
// benchmarks page quotes. Its sections, in order:
//
//   - start: the tuned control plane's start against controller-runtime's
//     stock envtest, alternating, with the medians of each phase;
//   - cycles: start/stop cycles of the tuned control plane, checked for
//     failures and leaks (harness/controlplane/cycles);
//   - env: the manager from start to ready, AppService convergence, the
//     sidecar injector's admission latency and VirtualMachine convergence
//     with the fake and the docker driver;
//   - leader: three manager processes electing a leader while the leader
//     is killed again and again, checked for overlapping leaderships;
//   - suite: the e2e suite in one process and in several on one control
//     plane, its parallel runs' failures counted;
//   - example: an outside project's suites on stock envtest, on the
//     drop-in, and in parallel processes.
//
// Figures go to standard output, progress to standard error. The generic
// parts live in the harness library; what is here measures this
// repository's operator, or runs its suite.
package bench
