// Package vmfixture holds what the VirtualMachine controller's tests and
// dev environment run it against: the fake driver, steered from specs in
// this process or, for parallel Ginkgo processes, over loopback
// (FakeVMs, ServeFakeVMs, RemoteFakeVMs), and the image VirtualMachines run
// with the docker driver, built from e2e/images/vm on the local Docker
// daemon (EnsureVMImage, after one PingDocker).
package vmfixture
