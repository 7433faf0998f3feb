package driver

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestLimits(t *testing.T) {
	tests := []struct {
		cpu, memory   string
		nano, bytes   int64
		wantErrSubstr string
	}{
		{cpu: "1", memory: "1Gi", nano: 1_000_000_000, bytes: 1 << 30},
		{cpu: "500m", memory: "64Mi", nano: 500_000_000, bytes: 64 << 20},
		{cpu: "2500m", memory: "4G", nano: 2_500_000_000, bytes: 4_000_000_000},
		{cpu: "2.5", memory: "6Mi", nano: 2_500_000_000, bytes: 6 << 20},
		{cpu: "10m", memory: "1.5Gi", nano: 10_000_000, bytes: 3 << 29},
		// Finer than a millicore rounds up to the next millicore.
		{cpu: "1500500u", memory: "64Mi", nano: 1_501_000_000, bytes: 64 << 20},
		{cpu: "9m", memory: "64Mi", wantErrSubstr: "cpu 9m is below Docker's minimum of 10m"},
		{cpu: "1", memory: "500m", wantErrSubstr: "memory 500m (1 bytes) is below Docker's minimum of 6Mi"},
		{cpu: "1", memory: "5Mi", wantErrSubstr: "below Docker's minimum of 6Mi"},
		{cpu: "2M", memory: "64Mi", wantErrSubstr: "cpu 2M is too large"},
		{cpu: "1", memory: "10E", wantErrSubstr: "memory 10E is too large"},
		{cpu: "0", memory: "64Mi", wantErrSubstr: "cpu must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.cpu+"/"+tt.memory, func(t *testing.T) {
			m := machine("vm", "u1")
			m.CPU, m.Memory = resource.MustParse(tt.cpu), resource.MustParse(tt.memory)
			nano, bytes, err := limits(m)
			if tt.wantErrSubstr != "" {
				if !errors.Is(err, ErrInvalidMachine) || !strings.Contains(err.Error(), tt.wantErrSubstr) {
					t.Fatalf("limits() error = %v, want ErrInvalidMachine saying %q", err, tt.wantErrSubstr)
				}
				return
			}
			if err != nil || nano != tt.nano || bytes != tt.bytes {
				t.Fatalf("limits() = %d, %d, %v; want %d, %d", nano, bytes, err, tt.nano, tt.bytes)
			}
		})
	}
}

func loadStats(t *testing.T, name string) container.StatsResponse {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "stats", name))
	if err != nil {
		t.Fatal(err)
	}
	var s container.StatsResponse
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The cgroupv1-* files were recorded from Docker 20.10 on a cgroup v1 host,
// for a container limited to 500m CPU and 64Mi memory running
// testdata/sleeper. cgroupv2-twosample.json has the shape a cgroup v2 host
// reports (no percpu_usage, inactive_file instead of total_inactive_file),
// with round numbers: 4 CPUs, 1.5 cores busy, a 2500m and 1Gi limit.
func TestStatsFormulas(t *testing.T) {
	t.Run("one-shot sample has no previous", func(t *testing.T) {
		s := loadStats(t, "cgroupv1-oneshot-1.json")
		if _, ok := cpuPercentOfLimit(s.PreCPUStats, s.CPUStats, 0.5); ok {
			t.Fatal("a one-shot sample compared with its empty precpu_stats")
		}
	})
	t.Run("two one-shot samples, cgroup v1", func(t *testing.T) {
		a, b := loadStats(t, "cgroupv1-oneshot-1.json"), loadStats(t, "cgroupv1-oneshot-2.json")
		got, ok := cpuPercentOfLimit(a.CPUStats, b.CPUStats, 0.5)
		// (756309103-644413958) / (25417050000000-25415010000000) × 2 CPUs × 100 / 0.5 cores
		want := float64(756309103-644413958) / float64(25417050000000-25415010000000) * 2 * 100 / 0.5
		if !ok || !near(got, want) || !near(want, 21.940224509803922) {
			t.Fatalf("cpu = %v, %v; want %v", got, ok, want)
		}
		// Of one core, as `docker stats` shows it: a fifth of a core busy.
		if cli, _ := cpuPercentOfLimit(a.CPUStats, b.CPUStats, 1); !near(cli, 10.970112254901961) {
			t.Fatalf("cpu of one core = %v", cli)
		}
		// (35561472 - 8388608 total_inactive_file) / 64Mi × 100
		if got := memoryPercentOfLimit(b.MemoryStats, 64<<20); !near(got, 40.49072265625) {
			t.Fatalf("memory = %v", got)
		}
	})
	t.Run("daemon's two samples, cgroup v1", func(t *testing.T) {
		s := loadStats(t, "cgroupv1-twosample.json")
		got, ok := cpuPercentOfLimit(s.PreCPUStats, s.CPUStats, 0.5)
		want := float64(1110332841-938253023) / float64(25421080000000-25419070000000) * 2 * 100 / 0.5
		if !ok || !near(got, want) {
			t.Fatalf("cpu = %v, %v; want %v", got, ok, want)
		}
	})
	t.Run("cgroup v2", func(t *testing.T) {
		s := loadStats(t, "cgroupv2-twosample.json")
		// 1.5e9 ns / 4e9 ns × 4 CPUs × 100 = 150 (1.5 cores), / 2.5 cores = 60.
		if got, ok := cpuPercentOfLimit(s.PreCPUStats, s.CPUStats, 2.5); !ok || !near(got, 60) {
			t.Fatalf("cpu = %v, %v; want 60", got, ok)
		}
		// (300Mi - 100Mi inactive_file) / 1Gi × 100
		if got := memoryPercentOfLimit(s.MemoryStats, 1<<30); !near(got, 19.53125) {
			t.Fatalf("memory = %v; want 19.53125", got)
		}
	})
	t.Run("edge cases", func(t *testing.T) {
		prev := container.CPUStats{CPUUsage: container.CPUUsage{TotalUsage: 100}, SystemUsage: 1000}
		cur := container.CPUStats{CPUUsage: container.CPUUsage{TotalUsage: 150, PercpuUsage: []uint64{75, 75}}, SystemUsage: 1100}
		// online_cpus missing: the per-CPU counters count.
		if got, ok := cpuPercentOfLimit(prev, cur, 1); !ok || !near(got, 100) {
			t.Fatalf("cpu without online_cpus = %v, %v", got, ok)
		}
		idle := cur
		idle.CPUUsage.TotalUsage = 100
		if got, ok := cpuPercentOfLimit(prev, idle, 1); !ok || got != 0 {
			t.Fatalf("idle cpu = %v, %v", got, ok)
		}
		restarted := cur
		restarted.CPUUsage.TotalUsage = 10
		if _, ok := cpuPercentOfLimit(prev, restarted, 1); ok {
			t.Fatal("a counter that went backwards was used")
		}
		if _, ok := cpuPercentOfLimit(prev, prev, 1); ok {
			t.Fatal("samples without elapsed system time were used")
		}
		mem := container.MemoryStats{Usage: 100, Stats: map[string]uint64{"inactive_file": 200}}
		if got := memoryUsed(mem); got != 100 {
			t.Fatalf("memoryUsed with more inactive_file than usage = %d", got)
		}
		if got := memoryPercentOfLimit(mem, 0); got != 0 {
			t.Fatalf("memory of no limit = %v", got)
		}
	})
}

// statsDaemon is an Engine API stand-in serving one running container and
// the given stats samples in turn (the last one again when they run out).
type statsDaemon struct {
	samples    []container.StatsResponse
	statsCalls atomic.Int32
	state      string
}

func (s *statsDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Api-Version", "1.41")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/_ping":
		_, _ = w.Write([]byte("OK"))
	case strings.HasSuffix(r.URL.Path, "/containers/json"):
		_ = json.NewEncoder(w).Encode([]container.Summary{{ID: "c1", State: container.ContainerState(s.state)}})
	case strings.HasSuffix(r.URL.Path, "/containers/c1/stats"):
		if r.URL.Query().Get("one-shot") != "true" || r.URL.Query().Get("stream") != "false" {
			http.Error(w, "want stream=false&one-shot=true", http.StatusBadRequest)
			return
		}
		n := int(s.statsCalls.Add(1))
		_ = json.NewEncoder(w).Encode(s.samples[min(n, len(s.samples))-1])
	default:
		http.NotFound(w, r)
	}
}

func newStatsDaemon(t *testing.T, state string, samples ...container.StatsResponse) (*statsDaemon, *Docker) {
	t.Helper()
	sd := &statsDaemon{samples: samples, state: state}
	srv := httptest.NewServer(sd)
	t.Cleanup(srv.Close)
	d, err := NewDocker(DockerOptions{Host: "tcp://" + srv.Listener.Addr().String(), TLS: TLSOff, CPUSampleInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return sd, d
}

func TestUsageSampling(t *testing.T) {
	ctx := context.Background()
	m := machine("vm", "u1")
	a, b := loadStats(t, "cgroupv1-oneshot-1.json"), loadStats(t, "cgroupv1-oneshot-2.json")

	t.Run("first call takes two samples, the next one", func(t *testing.T) {
		// A third sample, 1s after b, with 0.25 cores busy.
		c := b
		c.CPUStats.CPUUsage.TotalUsage += 250_000_000
		c.CPUStats.SystemUsage += 2_000_000_000
		sd, d := newStatsDaemon(t, "running", a, b, c)
		start := time.Now()
		u, err := d.Usage(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if sd.statsCalls.Load() != 2 || time.Since(start) < 20*time.Millisecond {
			t.Fatalf("first Usage took %d samples in %v, want 2 samples 20ms apart", sd.statsCalls.Load(), time.Since(start))
		}
		if !near(u.CPU, 21.940224509803922) || !near(u.Memory, 40.49072265625) {
			t.Fatalf("first Usage = %+v", u)
		}
		u, err = d.Usage(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if sd.statsCalls.Load() != 3 {
			t.Fatalf("second Usage took %d samples, want 1", sd.statsCalls.Load()-2)
		}
		if !near(u.CPU, 50) {
			t.Fatalf("second Usage CPU = %v, want 50 (0.25 of 0.5 cores)", u.CPU)
		}
		// Forgotten on Delete: the next call samples twice again.
		d.forget(m.UID)
		if _, err := d.Usage(ctx, m); err != nil || sd.statsCalls.Load() != 5 {
			t.Fatalf("Usage after forget: %v, %d samples in all", err, sd.statsCalls.Load())
		}
	})
	t.Run("daemon's previous sample is used", func(t *testing.T) {
		sd, d := newStatsDaemon(t, "running", loadStats(t, "cgroupv1-twosample.json"))
		u, err := d.Usage(ctx, m)
		if err != nil || sd.statsCalls.Load() != 1 || !near(u.CPU, float64(172079818)/2010000000*2*100/0.5) {
			t.Fatalf("Usage = %+v, %v after %d samples", u, err, sd.statsCalls.Load())
		}
	})
	t.Run("not running", func(t *testing.T) {
		sd, d := newStatsDaemon(t, "exited", a)
		if u, err := d.Usage(ctx, m); err != nil || u != (Usage{}) || sd.statsCalls.Load() != 0 {
			t.Fatalf("Usage of an exited container = %+v, %v", u, err)
		}
	})
	t.Run("cancelled while waiting for the second sample", func(t *testing.T) {
		_, d := newStatsDaemon(t, "running", a, b)
		d.cfg.interval = time.Hour
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := d.Usage(cctx, m); !errors.Is(err, context.DeadlineExceeded) || IsPermanent(err) {
			t.Fatalf("Usage = %v, want a transient deadline error", err)
		}
	})
}

func TestResolveOptions(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory:", err)
	}
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name   string
		opts   DockerOptions
		getenv func(string) string
		want   dockerConfig
	}{
		{"defaults", DockerOptions{}, env(),
			dockerConfig{host: "unix:///var/run/docker.sock", tls: TLSOff}},
		{"DOCKER_HOST and DOCKER_API_VERSION", DockerOptions{}, env("DOCKER_HOST", "tcp://10.0.0.5:2375", "DOCKER_API_VERSION", "v1.41"),
			dockerConfig{host: "tcp://10.0.0.5:2375", tls: TLSOff, apiVersion: "1.41"}},
		{"cert path without verify", DockerOptions{}, env("DOCKER_HOST", "tcp://h:2376", "DOCKER_CERT_PATH", "/certs"),
			dockerConfig{host: "tcp://h:2376", tls: TLSNoVerify, certPath: "/certs"}},
		{"verify", DockerOptions{}, env("DOCKER_HOST", "tcp://h:2376", "DOCKER_CERT_PATH", "/certs", "DOCKER_TLS_VERIFY", "1"),
			dockerConfig{host: "tcp://h:2376", tls: TLSVerify, certPath: "/certs"}},
		{"verify with the default directory", DockerOptions{}, env("DOCKER_TLS_VERIFY", "1"),
			dockerConfig{host: "unix:///var/run/docker.sock", tls: TLSVerify, certPath: filepath.Join(home, ".docker")}},
		{"options override the environment",
			DockerOptions{Host: "tcp://o:1", TLS: TLSOff, CertPath: "/mine", APIVersion: "1.44"},
			env("DOCKER_HOST", "tcp://h:2376", "DOCKER_CERT_PATH", "/certs", "DOCKER_TLS_VERIFY", "1", "DOCKER_API_VERSION", "1.41"),
			dockerConfig{host: "tcp://o:1", tls: TLSOff, apiVersion: "1.44"}},
		{"option cert path with verify from the environment", DockerOptions{CertPath: "/mine"}, env("DOCKER_TLS_VERIFY", "yes"),
			dockerConfig{host: "unix:///var/run/docker.sock", tls: TLSVerify, certPath: "/mine"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.opts.resolve(tt.getenv)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.interval = DefaultCPUSampleInterval
			tt.want.pidsLimit = DefaultPidsLimit
			if got != tt.want {
				t.Fatalf("resolve() = %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := (DockerOptions{Host: "no-scheme"}).resolve(env()); err == nil || !strings.Contains(err.Error(), `"no-scheme"`) {
		t.Fatalf("bad host: %v", err)
	}
	if _, err := (DockerOptions{TLS: TLSMode(9)}).resolve(env()); err == nil {
		t.Fatal("an unknown TLS mode was accepted")
	}
}

func TestNewDockerFromEnvironment(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_API_VERSION", "1.41")
	d, err := NewDocker(DockerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Host() != "tcp://127.0.0.1:1" || d.cli.ClientVersion() != "1.41" {
		t.Fatalf("host %s, API version %s", d.Host(), d.cli.ClientVersion())
	}
	// Nothing listens there: a transient error naming the address.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = d.Ping(ctx)
	if err == nil || IsPermanent(err) || !strings.Contains(err.Error(), "tcp://127.0.0.1:1") {
		t.Fatalf("Ping = %v, want a transient error naming the address", err)
	}
	_, err = d.Create(ctx, machine("vm", "u1"))
	if err == nil || IsPermanent(err) {
		t.Fatalf("Create without a daemon = %v, want a transient error", err)
	}
	t.Log(err)
}

// TestReportedLimitsOfRoundedAmounts: Docker holds 1500500u CPU as 1501m and
// a fractional byte rounded up; read back, a container made for the Machine
// has the Machine's own amounts, or the controller would replace it on
// every sync. Other limits read back as they are.
func TestReportedLimitsOfRoundedAmounts(t *testing.T) {
	m := machine("vm", "u1")
	m.CPU, m.Memory = resource.MustParse("1500500u"), resource.MustParse("67108864500m")
	nano, bytes, err := limits(m)
	if err != nil {
		t.Fatal(err)
	}
	cpu, memory := reportedLimits(m, nano, bytes)
	if cpu.Cmp(m.CPU) != 0 || memory.Cmp(m.Memory) != 0 {
		t.Errorf("limits %d, %d read back as %s, %s; want %s, %s", nano, bytes, cpu.String(), memory.String(), m.CPU.String(), m.Memory.String())
	}
	cpu, memory = reportedLimits(m, 2_000_000_000, 1<<30)
	if cpu.String() != "2" || memory.String() != "1Gi" {
		t.Errorf("other limits read back as %s, %s; want 2, 1Gi", cpu.String(), memory.String())
	}
}
