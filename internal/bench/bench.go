package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/controlplane/cycles"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/repo"
)

// Sections are the parts of Run, in the order they run.
var Sections = []string{"start", "cycles", "env", "leader", "suite", "shards", "example"}

// Options say what Run measures, and how much. Counts are not checked
// here: kubeharness bench refuses what cannot run before it calls Run.
type Options struct {
	// Root is the repository root: versions.yaml, the control-plane
	// binaries below bin/k8s, config/ and artifacts/.
	Root string
	// Version is the Kubernetes version of the control planes, resolved
	// through Proxy when set (else the Go module proxy).
	Version versions.Selector
	Proxy   versions.Proxy
	// Only names the sections to run (of Sections); nil runs all.
	Only map[string]bool
	// Starts is how many times the start section starts each setting
	// (a median needs at least 5).
	Starts int
	// Cycles is how many start/stop cycles the cycles section checks; 0
	// skips them.
	Cycles int
	// AppServices, Pods, VMs and DockerVMs are the env section's counts:
	// AppServices created at once, Pods created one by one through the
	// injector, VirtualMachines with the fake and with the docker driver;
	// 0 skips each.
	AppServices, Pods, VMs, DockerVMs int
	// LeaderKills is how many leaders the leader section kills; 0 skips.
	LeaderKills int
	// SuiteCmd is a shell command that runs the e2e suite in $PROCS Ginkgo
	// processes with the label filter $LABEL_FILTER (empty: every spec);
	// empty skips the suite section. SuiteProcs is how many processes the
	// parallel runs use (at least 2), SuiteRuns how many parallel runs
	// count failures (at least 1).
	SuiteCmd              string
	SuiteProcs, SuiteRuns int
	// FastFilter is the label filter of the suite's fast tier (make e2e's);
	// when set, the suite section also times one run of the fast tier in
	// SuiteProcs processes and prints it beside the whole suite's.
	FastFilter string
	// ShardCmd runs shard $SHARD of the suite packed by $SHARD_TIMINGS
	// (the whole suite when $SHARD is empty) and writes its Ginkgo JSON
	// report to $BENCH_OUT/report.json; empty skips the shards section.
	// Shards is how many shards it splits the suite into.
	ShardCmd string
	Shards   int
	// ExampleCmd runs an example project's suites; empty skips the example
	// section. ExampleRuns is how many times in each setting.
	ExampleCmd  string
	ExampleRuns int
}

// runs reports whether section runs.
func (o Options) runs(section string) bool { return o.Only == nil || o.Only[section] }

// Run runs the benchmarks' sections: it prints one or a few lines of
// figures each on standard output and its progress on standard error, and
// fails when a section finds what must not be (a leak, a failed suite run,
// two leaders at once).
func Run(ctx context.Context, o Options) error {
	root := o.Root
	res, err := binaries.NewResolver(root, os.Stderr)
	if err != nil {
		return err
	}
	if o.Proxy != nil {
		res.Proxy = o.Proxy
	}
	_, version, err := binaries.Locate(ctx, res, root, o.Version, binaries.DefaultComponents...)
	if err != nil {
		return err
	}
	if o.runs("start") {
		// Tuned starts run kube-apiserver-test when it was built; they are
		// timed with plain kube-apiserver too, to show what it saves.
		settings := []startSetting{{name: "tuned"}, {name: "stock", stock: true}}
		plane, err := repo.ControlPlane(root, version, controlplane.Options{})
		if err != nil {
			return err
		}
		if controlplane.APIServerBinary(plane.BinaryDir, plane) != binaries.KubeAPIServer.Name {
			settings = append(settings, startSetting{name: "tuned-plain-apiserver", plainAPIServer: true})
		}
		// One unmeasured start of each warms the page cache for the binaries.
		times, stops := map[string][]time.Duration{}, map[string][]time.Duration{}
		var phases []controlplane.StartTimes
		for i := -1; i < o.Starts; i++ {
			for _, s := range settings {
				if err := ctx.Err(); err != nil {
					return err
				}
				d, st, stop, err := timeStart(plane, s)
				if err != nil {
					return err
				}
				if i >= 0 {
					times[s.name] = append(times[s.name], d)
					stops[s.name] = append(stops[s.name], stop)
					if s.name == "tuned" {
						phases = append(phases, st)
					}
				}
			}
			if i >= 0 {
				fmt.Fprintf(os.Stderr, "  start %d/%d:", i+1, o.Starts)
				for _, s := range settings {
					fmt.Fprintf(os.Stderr, " %s %s", s.name, secs(times[s.name][i]))
				}
				fmt.Fprintln(os.Stderr)
			}
		}
		tuned, stock := median(times["tuned"]), median(times["stock"])
		fmt.Printf("envtest start: tuned %s stock %s ratio %.2f\n", secs(tuned), secs(stock), tuned.Seconds()/stock.Seconds())
		fmt.Printf("envtest stop: tuned p50 %s stock p50 %s\n", secs(median(stops["tuned"])), secs(median(stops["stock"])))
		fmt.Printf("  tuned start, medians: %s\n", medianStartTimes(phases))
		if ts := times["tuned-plain-apiserver"]; len(ts) > 0 {
			d := median(ts)
			fmt.Printf("  tuned with plain kube-apiserver: %s ratio %.2f\n", secs(d), d.Seconds()/stock.Seconds())
		}
	}
	if o.runs("cycles") {
		if err := benchCycles(ctx, root, version, o.Cycles); err != nil {
			return err
		}
	}

	if o.runs("env") {
		// The manager's log goes to a file: a benchmark prints figures.
		if err := os.MkdirAll(operatortest.ArtifactsDir(root), 0o755); err != nil {
			return err
		}
		logPath := filepath.Join(operatortest.ArtifactsDir(root), "bench-manager.log")
		logFile, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer logFile.Close()
		ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))
		env, err := startBenchEnv(ctx, root, version)
		if err != nil {
			return err
		}
		defer func() { _ = env.Stop() }()
		fmt.Printf("manager start to ready: %s (serving certificate through the CSR API, caBundle injected, canary admitted)\n", secs(env.ManagerReady))
		if err := benchAppServices(ctx, env, o.AppServices); err != nil {
			return err
		}
		if err := benchInjector(ctx, env, o.Pods); err != nil {
			return err
		}
		if err := benchVMs(ctx, root, env, o.VMs, o.DockerVMs); err != nil {
			return err
		}
	}

	if o.runs("leader") {
		if err := benchLeaderFailover(ctx, root, version, o.LeaderKills); err != nil {
			return err
		}
	}

	if o.runs("suite") && o.SuiteCmd != "" {
		if err := benchSuite(ctx, os.Stdout, suiteRuns{cmd: o.SuiteCmd, procs: o.SuiteProcs, runs: o.SuiteRuns, fastFilter: o.FastFilter}); err != nil {
			return err
		}
	}
	if o.runs("shards") && o.ShardCmd != "" {
		if err := benchShards(ctx, os.Stdout, o.ShardCmd, o.Shards); err != nil {
			return err
		}
	}
	if o.runs("example") && o.ExampleCmd != "" {
		return benchExample(ctx, o.ExampleCmd, o.SuiteProcs, o.ExampleRuns)
	}
	return nil
}

// startSetting is one way bench starts a control plane: tuned (with the
// plain kube-apiserver when plainAPIServer, harness/controlplane) or
// stock (controller-runtime's envtest as it comes, startStock).
type startSetting struct {
	name                  string
	stock, plainAPIServer bool
}

// timeStart measures one control-plane start of plane's binaries, from
// launching etcd until kube-apiserver answers its health check, says where
// a tuned start spent its time, and measures the stop that follows: until
// every process is reaped and its files removed.
func timeStart(plane controlplane.Options, s startSetting) (start time.Duration, times controlplane.StartTimes, stop time.Duration, err error) {
	if s.stock {
		began := time.Now()
		env, err := startStock(plane.BinaryDir)
		start = time.Since(began)
		if err != nil {
			return 0, controlplane.StartTimes{}, 0, err
		}
		began = time.Now()
		err = env.Stop()
		return start, controlplane.StartTimes{}, time.Since(began), err
	}
	plane.PlainAPIServer = s.plainAPIServer
	began := time.Now()
	cp, err := controlplane.Start(plane)
	start = time.Since(began)
	if err != nil {
		return 0, controlplane.StartTimes{}, 0, err
	}
	began = time.Now()
	err = cp.Stop()
	return start, cp.Times, time.Since(began), err
}

// benchCycles starts and stops the tuned control plane n times
// (harness/controlplane/cycles), prints the report's line and what failed
// or leaked, if anything, and returns an error if anything did.
func benchCycles(ctx context.Context, root string, version versions.Version, n int) error {
	if n == 0 {
		fmt.Println("start/stop cycles: skipped (--cycles=0)")
		return nil
	}
	plane, err := repo.ControlPlane(root, version, controlplane.Options{})
	if err != nil {
		return err
	}
	r, err := cycles.Run(ctx, cycles.Options{Cycles: n, ControlPlane: plane, Progress: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Println(r)
	r.WriteDetails(os.Stdout)
	if !r.OK() {
		return fmt.Errorf("start/stop cycles: %d failed, %d leaks (listed above)", r.Failed, r.Leaks())
	}
	return nil
}

// medianStartTimes is each phase's median over starts, with the readiness
// checks that were most often the last to pass.
func medianStartTimes(ts []controlplane.StartTimes) controlplane.StartTimes {
	pick := func(f func(controlplane.StartTimes) time.Duration) time.Duration {
		ds := make([]time.Duration, len(ts))
		for i, t := range ts {
			ds[i] = f(t)
		}
		return median(ds)
	}
	counts := map[string]int{}
	for _, t := range ts {
		for _, c := range t.LastChecks {
			counts[c]++
		}
	}
	var last []string
	for c, n := range counts {
		last = append(last, fmt.Sprintf("%s %d/%d", c, n, len(ts)))
	}
	sort.Strings(last)
	return controlplane.StartTimes{
		Template:         pick(func(t controlplane.StartTimes) time.Duration { return t.Template }),
		Etcd:             pick(func(t controlplane.StartTimes) time.Duration { return t.Etcd }),
		PKI:              pick(func(t controlplane.StartTimes) time.Duration { return t.PKI }),
		APIServerServing: pick(func(t controlplane.StartTimes) time.Duration { return t.APIServerServing }),
		APIServerReady:   pick(func(t controlplane.StartTimes) time.Duration { return t.APIServerReady }),
		LastChecks:       last,
		APIServer:        ts[0].APIServer,
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// pause waits a little between two looks at a benchmark's progress.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
