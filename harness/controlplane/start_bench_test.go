//go:build unix

package controlplane

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/harness/internal/testbins"
	"github.com/kubeharness/kubeharness/harness/process"
)

// BenchmarkTunedStart starts and stops the tuned control plane built in
// this repository b.N times and reports medians: the start, from Start's
// call to its return (what `kubeharness bench` prints as "envtest start:
// tuned"), etcd's own start within it, and CPU time, which a loaded machine
// blurs less than wall time: this process's during Start, and etcd's and
// the API server's over their whole run (start and stop). The etcd
// template is made before the first timed start.
func BenchmarkTunedStart(b *testing.B) {
	dir, root, _, err := testbins.Default()
	if err != nil {
		b.Skipf("no control-plane binaries (%v): run `kubeharness bins use` in this repository, or set KUBEBUILDER_ASSETS", err)
	}
	o := Options{BinaryDir: dir, TemplateDir: testbins.TemplateDir(root)}
	var starts, etcd, selfCPU, etcdCPU, apiCPU []time.Duration
	start := func() {
		before := selfUsage(b)
		began := time.Now()
		cp, err := Start(o)
		d := time.Since(began)
		if err != nil {
			b.Fatal(err)
		}
		self := selfUsage(b) - before
		if err := cp.Stop(); err != nil {
			b.Fatal(err)
		}
		starts, etcd, selfCPU = append(starts, d), append(etcd, cp.Times.Etcd), append(selfCPU, self)
		etcdCPU, apiCPU = append(etcdCPU, processCPU(cp.etcd.process())), append(apiCPU, processCPU(cp.api.process()))
	}
	start() // the template, and the binaries in the page cache
	starts, etcd, selfCPU, etcdCPU, apiCPU = nil, nil, nil, nil, nil
	b.ResetTimer()
	for range b.N {
		start()
	}
	b.StopTimer()
	b.ReportMetric(millis(median(starts)), "ms/start")
	b.ReportMetric(millis(median(etcd)), "ms/etcd-healthy")
	b.ReportMetric(millis(median(selfCPU)), "ms-cpu/harness")
	b.ReportMetric(millis(median(etcdCPU)), "ms-cpu/etcd")
	b.ReportMetric(millis(median(apiCPU)), "ms-cpu/apiserver")
}

// selfUsage is the CPU time this process has used.
func selfUsage(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPU is the CPU time p used, once it has ended.
func processCPU(p *process.Process) time.Duration {
	st := p.State()
	if st == nil {
		return 0
	}
	return st.UserTime() + st.SystemTime()
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
