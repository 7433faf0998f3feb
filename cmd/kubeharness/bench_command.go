package main

import (
	"context"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness/cli"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/bench"
	"github.com/kubeharness/kubeharness/internal/repo"
)

// benchOptions are the flags of `kubeharness bench` (newBenchCommand).
type benchOptions struct {
	starts, appServices, pods int
	// vms and dockerVMs are how many VirtualMachines the fake and the
	// docker driver are measured with; 0 skips.
	vms, dockerVMs    int
	version, suiteCmd string
	// cycles is how many start/stop cycles are checked; 0 skips.
	cycles int
	// only is --only: the sections to run (parseBenchOnly).
	only string
	// leaderKills is how many leaders the leader section kills; 0 skips.
	leaderKills int
	// suiteProcs is how many Ginkgo processes the parallel suite runs
	// use; suiteRuns how many parallel runs count failures.
	suiteProcs, suiteRuns int
	// fastFilter is the label filter of the suite's fast tier; empty
	// leaves it untimed.
	fastFilter string
	// shardCmd runs one shard of the suite; shards is how many.
	shardCmd string
	shards   int
	// exampleCmd runs an example project's suites; exampleRuns is how many
	// times in each setting.
	exampleCmd  string
	exampleRuns int
}

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
with plain kube-apiserver too ("tuned with plain kube-apiserver").

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
reads $PROCS and $LABEL_FILTER, empty for every spec; $BENCH_RUN names the
run), prints both wall times, and fails when a parallel run failed. With
--fast-label-filter it also runs the suite's fast tier once, in
--suite-procs processes with $LABEL_FILTER set to that filter, and prints its
wall time beside the whole suite's (the first parallel run):

  suite: serial 302.50s parallel 217.12s (2 processes, one control plane)
  suite: fast 24.73s all 217.12s
  parallel suite runs: 5, failed 0

With --shard-cmd it then runs that command (one shard of the suite: it
reads $SHARD, k/n or empty for the whole suite, and $SHARD_TIMINGS, and
writes its Ginkgo JSON report to $BENCH_OUT/report.json) once for the whole
suite and then for each of --shards shards packed by that run's times, and
prints the shards' suite times against the whole run's; it fails unless the
shards together ran exactly the whole run's specs, each once:

  shards: n=3 slowest 56.35s mean 53.43s whole 143.37s (suite times; 121 specs, each in one shard)

With --example-cmd it then runs that command (the suites of an operator
project that uses harness/envtest; it reads $PROCS, $KUBEHARNESS_ENVTEST and
$BENCH_ROUND, 0 for the uncounted first round, and writes its Ginkgo JSON
report to $BENCH_OUT/report.json)
--example-runs times in each of four settings, alternating: on
controller-runtime's envtest and on the drop-in in one process, on the
drop-in in one process with an empty user cache (a fresh CI runner: only
the templates beside the binaries), and on the drop-in in --suite-procs
processes sharing one control plane; it prints the
medians of the walls, of the suites' setup and teardown (their BeforeSuite
and AfterSuite nodes, from the Ginkgo report the command writes to
$BENCH_OUT/report.json) and of the drop-in's CRD installs (from
$KUBEHARNESS_ENVTEST_TIMES), and fails when a run failed:

  example suites: stock 9.10s drop-in 6.20s ratio 0.68 (1 process); drop-in serial 6.20s parallel 4.90s (2 processes)
  example setup+teardown: stock 11.80s drop-in 3.10s ratio 0.26 (BeforeSuite and AfterSuite of every suite, 1 process)
  example CRD install: p50 0.07s max 0.12s (drop-in, 6 starts)
  drop-in first start (empty cache): 2.23s stock 10.03s ratio 0.22 (example setup+teardown, 1 process, templates beside the binaries only)
  install: p50 0.10s (example, CRDs and webhooks, drop-in, 6 starts)

--only runs some of these sections, in this order: start (tuned against
stock), cycles, env (the manager, AppServices, the injector and
VirtualMachines), leader, suite, shards, example; e.g. --only=cycles,leader.`,
		Args: cli.NoArgs,
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
	cmd.Flags().StringVar(&o.fastFilter, "fast-label-filter", "", "Ginkgo label filter of the suite's fast tier (make e2e's, e.g. '!slow'): timed once in --suite-procs processes, with $LABEL_FILTER set to it (default: not timed)")
	cmd.Flags().StringVar(&o.shardCmd, "shard-cmd", "", "shell command that runs shard $SHARD (k/n; empty: the whole suite) of the suite packed by $SHARD_TIMINGS, its Ginkgo JSON report to $BENCH_OUT/report.json")
	cmd.Flags().IntVar(&o.shards, "shards", 3, "how many shards the shards section splits the suite into")
	cmd.Flags().StringVar(&o.exampleCmd, "example-cmd", "", "shell command that runs an example project's suites in $PROCS Ginkgo processes, on $KUBEHARNESS_ENVTEST (stock or tuned)")
	cmd.Flags().IntVar(&o.exampleRuns, "example-runs", 3, "runs of the example's suites in each setting; medians are printed")
	cmd.Flags().IntVar(&o.appServices, "appservices", 1000, "AppServices created at once for the convergence benchmark")
	cmd.Flags().IntVar(&o.pods, "pods", 500, "Pods created one by one for the injector latency benchmark")
	cmd.Flags().IntVar(&o.vms, "vms", 200, "VirtualMachines created at once for the fake driver's convergence benchmark (0 skips it)")
	cmd.Flags().IntVar(&o.dockerVMs, "docker-vms", 20, "VirtualMachines created at once for the docker driver's convergence benchmark, run when a Docker daemon answers (0 skips it)")
	return cmd
}

// benchSections are the parts of `kubeharness bench`, in the order they run.
var benchSections = bench.Sections

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
			return nil, cli.UsageErrorf("--only=%s: no section %q; the sections are %s", only, s, strings.Join(benchSections, ", "))
		}
		run[s] = true
	}
	return run, nil
}

// runBench is `kubeharness bench`: it refuses counts that cannot run, as
// usage errors, and runs internal/bench.
func runBench(ctx context.Context, o *benchOptions) error {
	if o.starts < 5 {
		return cli.UsageErrorf("--starts=%d: a median needs at least 5 starts", o.starts)
	}
	if o.appServices < 0 || o.pods < 0 {
		return cli.UsageErrorf("--appservices=%d --pods=%d: a count, 0 to skip", o.appServices, o.pods)
	}
	if o.vms < 0 || o.dockerVMs < 0 {
		return cli.UsageErrorf("--vms=%d --docker-vms=%d: a count of VirtualMachines, 0 to skip", o.vms, o.dockerVMs)
	}
	if o.cycles < 0 {
		return cli.UsageErrorf("--cycles=%d: a count of start/stop cycles, 0 to skip", o.cycles)
	}
	if o.leaderKills < 0 {
		return cli.UsageErrorf("--leader-kills=%d: a count of leaders to kill, 0 to skip", o.leaderKills)
	}
	run, err := parseBenchOnly(o.only)
	if err != nil {
		return err
	}
	if run["shards"] && o.shardCmd != "" && o.shards < 2 {
		return cli.UsageErrorf("--shards=%d: at least 2", o.shards)
	}
	if run["example"] && o.exampleCmd != "" && o.exampleRuns < 1 {
		return cli.UsageErrorf("--example-runs=%d: at least 1", o.exampleRuns)
	}
	if run["suite"] && o.suiteCmd != "" && (o.suiteProcs < 2 || o.suiteRuns < 1) {
		return cli.UsageErrorf("--suite-procs=%d --suite-runs=%d: the suite section needs at least 2 processes and 1 run", o.suiteProcs, o.suiteRuns)
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	req, err := cli.VersionRequest(o.version, "")
	if err != nil {
		return err
	}
	return bench.Run(ctx, bench.Options{
		Root: root, Version: req, Proxy: moduleProxy, Only: run,
		Starts: o.starts, Cycles: o.cycles,
		AppServices: o.appServices, Pods: o.pods, VMs: o.vms, DockerVMs: o.dockerVMs,
		LeaderKills: o.leaderKills,
		SuiteCmd:    o.suiteCmd, SuiteProcs: o.suiteProcs, SuiteRuns: o.suiteRuns, FastFilter: o.fastFilter,
		ExampleCmd: o.exampleCmd, ExampleRuns: o.exampleRuns, ShardCmd: o.shardCmd, Shards: o.shards,
	})
}
