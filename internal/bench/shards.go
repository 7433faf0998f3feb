package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/kubeharness/kubeharness/harness/report"
)

// benchShards is bench's shards section: cmd (a shell command that runs
// shard $SHARD of the suite, packed by $SHARD_TIMINGS, and writes its
// Ginkgo JSON report to $BENCH_OUT/report.json) runs the whole suite once
// ($SHARD empty), then each of n shards packed by that run's times, one
// after another. It prints the shards' suite times against the whole
// run's, and fails unless the shards together ran exactly the specs the
// whole run ran, each once.
func benchShards(ctx context.Context, out io.Writer, cmd string, n int) error {
	scratch, err := os.MkdirTemp("", "kubeharness-bench-shards-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	run := func(name, shard, timings string) (time.Duration, []string, error) {
		dir := filepath.Join(scratch, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			return 0, nil, err
		}
		c := exec.CommandContext(ctx, "bash", "-c", cmd)
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		c.Env = append(os.Environ(), "SHARD="+shard, "SHARD_TIMINGS="+timings, "BENCH_OUT="+dir)
		err := c.Run()
		fmt.Fprintf(os.Stderr, "  shards: %s run %s\n", name, result(err))
		if err != nil {
			return 0, nil, fmt.Errorf("the suite's %s run failed: %w", name, err)
		}
		reports, err := report.ReadReports(filepath.Join(dir, report.JSONReportFile))
		if err != nil {
			return 0, nil, err
		}
		took, ran := suiteTime(reports)
		return took, ran, nil
	}
	whole, wholeRan, err := run("whole", "", "")
	if err != nil {
		return err
	}
	timings := filepath.Join(scratch, "whole", report.JSONReportFile)
	var times []time.Duration
	var ran []string
	for k := 1; k <= n; k++ {
		took, specs, err := run(fmt.Sprintf("shard-%d", k), fmt.Sprintf("%d/%d", k, n), timings)
		if err != nil {
			return err
		}
		times = append(times, took)
		ran = append(ran, specs...)
	}
	slices.Sort(ran)
	if !slices.Equal(ran, wholeRan) {
		return fmt.Errorf("the %d shards ran %d specs, the whole run %d: a spec ran in no shard or in two", n, len(ran), len(wholeRan))
	}
	var total time.Duration
	for _, t := range times {
		total += t
	}
	fmt.Fprintf(out, "shards: n=%d slowest %s mean %s whole %s (suite times; %d specs, each in one shard)\n",
		n, secs(slices.Max(times)), secs(total/time.Duration(n)), secs(whole), len(ran))
	return nil
}

// suiteTime is the longest suite run time in reports, and the full texts
// of the specs that ran, sorted.
func suiteTime(reports []types.Report) (time.Duration, []string) {
	var took time.Duration
	var ran []string
	for _, r := range reports {
		took = max(took, r.RunTime)
		for _, s := range r.SpecReports {
			if s.LeafNodeType == types.NodeTypeIt && !s.State.Is(types.SpecStateSkipped|types.SpecStatePending) {
				ran = append(ran, r.SuiteDescription+" | "+s.FullText())
			}
		}
	}
	slices.Sort(ran)
	return took, ran
}
