package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/envtest"
)

// suiteRuns is what bench's suite section runs: cmd, a shell command that
// runs the suite with $PROCS processes, reads $LABEL_FILTER (empty: every
// spec) and may use $BENCH_RUN (serial, fast, 1, 2, ...) to keep each
// run's reports apart; procs processes in the parallel runs, runs of them;
// fastFilter, when set, the label filter of the suite's fast tier.
type suiteRuns struct {
	cmd         string
	procs, runs int
	fastFilter  string
}

// benchSuite is bench's suite section: the suite once in one Ginkgo
// process, its fast tier once in procs processes (with a fastFilter), then
// the suite runs times in procs processes, and how many of the parallel
// runs failed. The first parallel run's wall time is the whole suite's
// beside the serial run and beside the fast tier. It writes its figures
// to out.
func benchSuite(ctx context.Context, out io.Writer, s suiteRuns) error {
	run := func(name string, procs int, filter string) (time.Duration, error) {
		start := time.Now()
		c := exec.CommandContext(ctx, "bash", "-c", s.cmd)
		c.Stdout, c.Stderr, c.Env = os.Stderr, os.Stderr,
			append(os.Environ(), "PROCS="+strconv.Itoa(procs), "BENCH_RUN="+name, "LABEL_FILTER="+filter)
		err := c.Run()
		took := time.Since(start)
		fmt.Fprintf(os.Stderr, "  suite run %s (%d processes): %s, %s\n", name, procs, secs(took), result(err))
		return took, err
	}
	serial, err := run("serial", 1, "")
	if err != nil {
		return fmt.Errorf("the suite failed in one process: %w", err)
	}
	var fast time.Duration
	if s.fastFilter != "" {
		if fast, err = run("fast", s.procs, s.fastFilter); err != nil {
			return fmt.Errorf("the suite's fast tier (label filter %s) failed: %w", s.fastFilter, err)
		}
	}
	var parallel time.Duration
	failed := 0
	for i := 1; i <= s.runs; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		took, err := run(strconv.Itoa(i), s.procs, "")
		if i == 1 {
			parallel = took
		}
		if err != nil {
			failed++
		}
	}
	fmt.Fprintf(out, "suite: serial %s parallel %s (%d processes, one control plane)\n", secs(serial), secs(parallel), s.procs)
	if s.fastFilter != "" {
		fmt.Fprintf(out, "suite: fast %s all %s\n", secs(fast), secs(parallel))
	}
	fmt.Fprintf(out, "parallel suite runs: %d, failed %d\n", s.runs, failed)
	if failed > 0 {
		return fmt.Errorf("%d of %d parallel suite runs failed: specs interfere with each other, or flake", failed, s.runs)
	}
	return nil
}

// benchExample is bench's example section: an example project's suites
// (cmd reads $PROCS and $KUBEHARNESS_ENVTEST, and writes its Ginkgo JSON
// report to $BENCH_OUT/report.json) runs times in each of four settings,
// alternating so that the machine's drift touches all alike:
// controller-runtime's envtest and the drop-in in one process, the drop-in
// in one process with an empty user cache (a fresh CI runner's first
// start, the binaries' templates prepared beside them as `kubeharness bins
// use` prepares them), the drop-in in procs processes on one control
// plane. It prints the medians of the
// runs' walls and of their setup and teardown (the BeforeSuite and
// AfterSuite nodes of every suite), and the drop-in's CRD installs (from
// $KUBEHARNESS_ENVTEST_TIMES).
func benchExample(ctx context.Context, cmd string, procs, runs int) error {
	type setting struct {
		name, envtest string
		procs         int
		// emptyCache runs with a user cache directory of its own, empty,
		// as on a fresh CI runner that caches the binaries' directory only.
		emptyCache bool
	}
	settings := []setting{{"stock", "stock", 1, false}, {"drop-in", "tuned", 1, false}, {"first", "tuned", 1, true}, {"parallel", "tuned", procs, false}}
	// A fresh runner's binaries come from `kubeharness bins use`, which
	// prepares their base etcd templates beside them.
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		if _, err := controlplane.PrepareTemplates(ctx, assets); err != nil {
			return fmt.Errorf("preparing the etcd templates beside %s: %w", assets, err)
		}
	}
	// An empty user cache must not empty Go's build cache too.
	goCache, err := exec.CommandContext(ctx, "go", "env", "GOCACHE").Output()
	if err != nil {
		return fmt.Errorf("go env GOCACHE: %w", err)
	}
	times := map[string][]time.Duration{}
	setup := map[string][]time.Duration{}
	var installs []time.Duration
	scratch, err := os.MkdirTemp("", "kubeharness-bench-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	// Round 0 is not counted: it compiles the suites ($BENCH_ROUND=0 tells
	// the command) and makes the etcd templates.
	for round := 0; round <= runs; round++ {
		for _, st := range settings {
			if err := ctx.Err(); err != nil {
				return err
			}
			out := filepath.Join(scratch, fmt.Sprintf("%d-%s", round, st.name))
			if err := os.Mkdir(out, 0o700); err != nil {
				return err
			}
			start := time.Now()
			c := exec.CommandContext(ctx, "bash", "-c", cmd)
			c.Stdout, c.Stderr = os.Stderr, os.Stderr
			c.Env = append(os.Environ(), "PROCS="+strconv.Itoa(st.procs), "KUBEHARNESS_ENVTEST="+st.envtest,
				"BENCH_ROUND="+strconv.Itoa(round), "BENCH_OUT="+out, envtest.EnvTimes+"="+filepath.Join(out, "times.jsonl"))
			if st.emptyCache {
				cache := filepath.Join(out, "user-cache")
				if err := os.Mkdir(cache, 0o700); err != nil {
					return err
				}
				c.Env = append(c.Env, "XDG_CACHE_HOME="+cache, "GOCACHE="+strings.TrimSpace(string(goCache)))
			}
			err := c.Run()
			took := time.Since(start)
			fmt.Fprintf(os.Stderr, "  example round %d, %s (%d processes): %s, %s\n", round, st.name, st.procs, secs(took), result(err))
			if err != nil {
				return fmt.Errorf("the example's suites failed (%s, %d processes): %w", st.name, st.procs, err)
			}
			if round == 0 {
				continue
			}
			times[st.name] = append(times[st.name], took)
			d, err := setupAndTeardown(filepath.Join(out, "report.json"))
			if err != nil {
				return fmt.Errorf("the example's report (%s): %w", st.name, err)
			}
			setup[st.name] = append(setup[st.name], d)
			if st.name == "drop-in" {
				got, err := readInstalls(filepath.Join(out, "times.jsonl"))
				if err != nil {
					return fmt.Errorf("the drop-in's start times: %w", err)
				}
				installs = append(installs, got...)
			}
		}
	}
	stock, dropIn, parallel := median(times["stock"]), median(times["drop-in"]), median(times["parallel"])
	fmt.Printf("example suites: stock %s drop-in %s ratio %.2f (1 process); drop-in serial %s parallel %s (%d processes)\n",
		secs(stock), secs(dropIn), dropIn.Seconds()/stock.Seconds(), secs(dropIn), secs(parallel), procs)
	stockSetup, dropInSetup := median(setup["stock"]), median(setup["drop-in"])
	fmt.Printf("example setup+teardown: stock %s drop-in %s ratio %.2f (BeforeSuite and AfterSuite of every suite, 1 process)\n",
		secs(stockSetup), secs(dropInSetup), dropInSetup.Seconds()/stockSetup.Seconds())
	fmt.Printf("example CRD install: p50 %s max %s (drop-in, %d starts)\n", secs(median(installs)), secs(slices.Max(append(installs, 0))), len(installs))
	first := median(setup["first"])
	fmt.Printf("drop-in first start (empty cache): %s stock %s ratio %.2f (example setup+teardown, 1 process, templates beside the binaries only)\n",
		secs(first), secs(stockSetup), first.Seconds()/stockSetup.Seconds())
	fmt.Printf("install: p50 %s (example, CRDs and webhooks, drop-in, %d starts)\n", secs(median(installs)), len(installs))
	return nil
}

// setupAndTeardown is the time a run's suites spent in their BeforeSuite
// and AfterSuite nodes (synchronized or not; on every process), from
// the Ginkgo JSON report at path.
func setupAndTeardown(path string) (time.Duration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	var d time.Duration
	found := false
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType.Is(types.NodeTypeBeforeSuite | types.NodeTypeSynchronizedBeforeSuite | types.NodeTypeAfterSuite | types.NodeTypeSynchronizedAfterSuite) {
				d += s.RunTime
				found = true
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("%s: no BeforeSuite or AfterSuite in %d suites", path, len(reports))
	}
	return d, nil
}

// readInstalls reads the CRD and webhook install times of each start
// recorded in a $KUBEHARNESS_ENVTEST_TIMES file.
func readInstalls(path string) ([]time.Duration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for line := range strings.Lines(string(data)) {
		var rec struct {
			Install float64 `json:"installSeconds"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, time.Duration(rec.Install*float64(time.Second)))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no start recorded", path)
	}
	return out, nil
}

func result(err error) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	return "passed"
}
