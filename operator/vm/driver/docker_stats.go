package driver

import (
	"fmt"
	"math"

	"github.com/moby/moby/api/types/container"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Docker's lower bounds for the limits (the daemon refuses less).
const (
	minNanoCPUs    = 10_000_000 // 0.01 CPU
	minMemoryBytes = 6 << 20    // 6Mi
)

// maxCPU bounds the CPU limit so that MilliValue × 10^6 fits an int64
// (the bound is far above any host).
var maxCPU = resource.MustParse("1M")

// limits returns the Docker limits for m: NanoCPUs = CPU in cores × 10^9,
// computed exactly as CPU.MilliValue() × 10^6 (1 → 1e9, 500m → 5e8; a
// finer CPU is rounded up to the next millicore), and Memory = the memory
// in bytes, Memory.Value() (rounded up to a whole byte). Limits below what
// Docker accepts (0.01 CPU, 6Mi) are ErrInvalidMachine.
func limits(m Machine) (nanoCPUs, memory int64, err error) {
	if m.CPU.Sign() <= 0 || m.Memory.Sign() <= 0 {
		return 0, 0, m.Validate()
	}
	if m.CPU.Cmp(maxCPU) > 0 {
		return 0, 0, invalidMachine(m, fmt.Sprintf("cpu %s is too large", m.CPU.String()))
	}
	nanoCPUs = m.CPU.MilliValue() * 1_000_000
	if nanoCPUs < minNanoCPUs {
		return 0, 0, invalidMachine(m, fmt.Sprintf("cpu %s is below Docker's minimum of 10m", m.CPU.String()))
	}
	if m.Memory.Cmp(*resource.NewQuantity(math.MaxInt64, resource.BinarySI)) > 0 {
		return 0, 0, invalidMachine(m, fmt.Sprintf("memory %s is too large", m.Memory.String()))
	}
	memory = m.Memory.Value()
	if memory < minMemoryBytes {
		return 0, 0, invalidMachine(m, fmt.Sprintf("memory %s (%d bytes) is below Docker's minimum of 6Mi", m.Memory.String(), memory))
	}
	return nanoCPUs, memory, nil
}

// reportedLimits are a container's limits, nanoCPUs and memory bytes, as
// Server.CPU and Server.Memory report them for m: m's own quantities where
// the container has what limits(m) gives, else the container's in
// millicores and bytes. Docker holds a CPU finer than a millicore or a
// fractional byte rounded up, and a caller comparing such an amount read
// back with m's would see a changed spec, and replace the server, on every
// sync.
func reportedLimits(m Machine, nanoCPUs, memory int64) (cpu, mem resource.Quantity) {
	cpu = *resource.NewMilliQuantity(nanoCPUs/1_000_000, resource.DecimalSI)
	mem = *resource.NewQuantity(memory, resource.BinarySI)
	if wantCPU, wantMemory, err := limits(m); err == nil {
		if nanoCPUs == wantCPU {
			cpu = m.CPU.DeepCopy()
		}
		if memory == wantMemory {
			mem = m.Memory.DeepCopy()
		}
	}
	return cpu, mem
}

// cores returns q in cores, as a float.
func cores(q resource.Quantity) float64 {
	return float64(q.MilliValue()) / 1000
}

// onlineCPUs is the number of CPUs the daemon reports, or the number of
// per-CPU counters for daemons that do not report it.
func onlineCPUs(s container.CPUStats) float64 {
	if s.OnlineCPUs > 0 {
		return float64(s.OnlineCPUs)
	}
	return float64(len(s.CPUUsage.PercpuUsage))
}

// cpuPercentOfLimit returns the CPU the container used between the samples
// prev and cur, in percent of limitCores:
//
//	cpuDelta    = cur.cpu_usage.total_usage - prev.cpu_usage.total_usage
//	systemDelta = cur.system_cpu_usage      - prev.system_cpu_usage
//	percent     = cpuDelta / systemDelta × online_cpus × 100 / limitCores
//
// The first three lines are the Docker CLI's `docker stats` CPU % (where
// 100 is one core busy); the division by the limit makes 100 the whole
// limit. ok is false when the samples cannot be compared: no system time
// elapsed between them (or no system counter at all), or the container's
// counter went backwards (it was restarted in between).
func cpuPercentOfLimit(prev, cur container.CPUStats, limitCores float64) (percent float64, ok bool) {
	if cur.SystemUsage <= prev.SystemUsage || prev.SystemUsage == 0 ||
		cur.CPUUsage.TotalUsage < prev.CPUUsage.TotalUsage || limitCores <= 0 {
		return 0, false
	}
	cpuDelta := float64(cur.CPUUsage.TotalUsage - prev.CPUUsage.TotalUsage)
	systemDelta := float64(cur.SystemUsage - prev.SystemUsage)
	return cpuDelta / systemDelta * onlineCPUs(cur) * 100 / limitCores, true
}

// memoryUsed returns the container's memory use without the page cache
// that can be reclaimed at once, as the Docker CLI does: usage minus
// total_inactive_file on cgroup v1, minus inactive_file on cgroup v2 (when
// less than usage).
func memoryUsed(m container.MemoryStats) uint64 {
	if v, v1 := m.Stats["total_inactive_file"]; v1 && v < m.Usage {
		return m.Usage - v
	}
	if v := m.Stats["inactive_file"]; v < m.Usage {
		return m.Usage - v
	}
	return m.Usage
}

// memoryPercentOfLimit returns memoryUsed(m) / limitBytes × 100.
func memoryPercentOfLimit(m container.MemoryStats, limitBytes int64) float64 {
	if limitBytes <= 0 {
		return 0
	}
	return float64(memoryUsed(m)) / float64(limitBytes) * 100
}
