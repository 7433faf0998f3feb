package main

import (
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// newBenchCommand is `kubeharness bench`.
func newBenchCommand() *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "measure envtest control-plane start (tuned against stock settings) and the e2e suite",
		Long: `Starts the envtest control plane N times with the kubeharness-tuned settings
and N times with controller-runtime's stock settings, alternating, and
prints the median time from starting the processes until the API server
answers:

  envtest start: tuned 0.95s stock 4.58s ratio 0.21

Tuned starts run kube-apiserver-test when it was built; they are then timed
with the stock kube-apiserver too ("tuned with the stock kube-apiserver").

It then starts and stops the tuned control plane --cycles times and fails if
a start or stop failed or a cycle left anything behind: processes, listening
ports, etcd's tmpfs directory, temp directories, or file descriptors and
goroutines of its own (each cycle's files, ports and processes are recorded,
so other control planes on the machine do not count):

  start/stop cycles: 200, failures 0, leaked: processes 0, listening ports 0, tmpfs dirs 0, temp dirs 0, fds +0, goroutines +0; start p50 0.45s ...

It then measures the manager from start to ready, AppService convergence and
the sidecar injector's admission latency, and the VirtualMachine controller:
--vms VirtualMachines created at once with the fake driver, then --docker-vms
with the docker driver (when a Docker daemon answers, else a note says it was
skipped; the image is built from e2e/images/vm, nothing is pulled), each
until all are Active, then deleted until all are gone with their servers:

  VirtualMachines: 200 with the fake driver converged to Active in 2.10s (95.2/s; ...)

It then runs three manager processes electing a leader with config/manager's
lease timings, kills the leader with SIGKILL --leader-kills times, and checks
the leadership intervals the replicas logged: no two may overlap, and no
failover may take 15 s:

  leader election under fire: 20 kills, failover p50 9.65s max 9.73s (lease 8s, renew 6s, retry 2s); 21 leadership intervals checked, 0 overlaps; ...

With --suite-cmd it then runs that command (the e2e suite) once in one
Ginkgo process and --suite-runs times in --suite-procs processes (the command
reads $PROCS; $BENCH_RUN names the run), prints both wall times, and fails
when a parallel run failed:

  suite: serial 302.50s parallel 217.12s (2 processes, one control plane)
  parallel suite runs: 5, failed 0

With --example-cmd it then runs that command (the suites of an operator
project that uses harness/envtest; it reads $PROCS, $KUBEHARNESS_ENVTEST and
$BENCH_ROUND, 0 for the uncounted first round)
--example-runs times in each of three settings, alternating: on
controller-runtime's envtest and on the drop-in in one process, and on the
drop-in in --suite-procs processes sharing one control plane; it prints the
medians and fails when a run failed:

  example suites: stock 9.10s drop-in 6.20s ratio 0.68 (1 process); drop-in serial 6.20s parallel 4.90s (2 processes)

--only runs some of these sections, in this order: start (tuned against
stock), cycles, env (the manager, AppServices, the injector and
VirtualMachines), leader, suite, example; e.g. --only=cycles,leader.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), o)
		},
	}
	cmd.Flags().IntVar(&o.starts, "starts", 7, "control-plane starts per setting (at least 5)")
	cmd.Flags().IntVar(&o.leaderKills, "leader-kills", 20, "leaders of three manager processes killed with SIGKILL, one after another; failover p50/max reported, overlapping leaderships fail (0 skips)")
	cmd.Flags().IntVar(&o.cycles, "cycles", 200, "start/stop cycles of the tuned control plane checked for failures and leaks (0 skips them)")
	cmd.Flags().StringVar(&o.only, "only", "", "comma-separated sections to run, of "+strings.Join(benchSections, ",")+" (default: all)")
	cmd.Flags().StringVar(&o.version, "version", "", "Kubernetes version: a patch, or a minor for its newest patch (default: $"+versions.EnvVar+", then versions.yaml)")
	cmd.Flags().StringVar(&o.suiteCmd, "suite-cmd", "", "shell command that runs the e2e suite in $PROCS Ginkgo processes")
	cmd.Flags().IntVar(&o.suiteProcs, "suite-procs", max(2, runtime.NumCPU()), "Ginkgo processes of the parallel suite runs (at least 2; default: the machine's cores)")
	cmd.Flags().IntVar(&o.suiteRuns, "suite-runs", 5, "parallel suite runs, whose failures are counted; the first one's wall time is printed")
	cmd.Flags().StringVar(&o.exampleCmd, "example-cmd", "", "shell command that runs an example project's suites in $PROCS Ginkgo processes, on $KUBEHARNESS_ENVTEST (stock or tuned)")
	cmd.Flags().IntVar(&o.exampleRuns, "example-runs", 3, "runs of the example's suites in each setting; medians are printed")
	cmd.Flags().IntVar(&o.appServices, "appservices", 1000, "AppServices created at once for the convergence benchmark")
	cmd.Flags().IntVar(&o.pods, "pods", 500, "Pods created one by one for the injector latency benchmark")
	cmd.Flags().IntVar(&o.vms, "vms", 200, "VirtualMachines created at once for the fake driver's convergence benchmark (0 skips it)")
	cmd.Flags().IntVar(&o.dockerVMs, "docker-vms", 20, "VirtualMachines created at once for the docker driver's convergence benchmark, run when a Docker daemon answers (0 skips it)")
	return cmd
}

// benchSections are the parts of `kubeharness bench`, in the order they run.
var benchSections = []string{"start", "cycles", "env", "leader", "suite", "example"}

// parseBenchOnly is --only: the sections named, or all of them.
func parseBenchOnly(only string) (map[string]bool, error) {
	run := map[string]bool{}
	for _, s := range benchSections {
		run[s] = only == ""
	}
	if only == "" {
		return run, nil
	}
	for _, s := range strings.Split(only, ",") {
		if _, ok := run[s]; !ok {
			return nil, usageErrorf("--only=%s: no section %q; the sections are %s", only, s, strings.Join(benchSections, ", "))
		}
		run[s] = true
	}
	return run, nil
}
