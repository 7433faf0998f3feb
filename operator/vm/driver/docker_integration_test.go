package driver

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"k8s.io/apimachinery/pkg/api/resource"
)

// testLabel marks the images and foreign containers the integration test
// makes, so that leftovers of an interrupted run can be found.
const testLabel = "kubeharness.test/vm-driver"

// TestDockerIntegration runs the docker driver against the daemon at
// DOCKER_HOST (or the local socket); it is skipped when none answers. It
// builds its own image from testdata/sleeper (nothing is pulled) and
// removes the image and every container it made.
func TestDockerIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Docker daemon; skipped with -short")
	}
	d, err := NewDocker(DockerOptions{CPUSampleInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("docker driver from the environment: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pingCtx, pingCancel := context.WithTimeout(ctx, 5*time.Second)
	err = d.Ping(pingCtx)
	pingCancel()
	if err != nil {
		t.Skipf("no Docker daemon answers at %s: %v", d.Host(), err)
	}
	cli := d.cli
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	image := buildTestImage(ctx, t, cli, run)
	ns := "kubeharness-drvtest-" + run
	t.Cleanup(func() { removeTestContainers(t, cli, ns) })

	m := Machine{
		Namespace: ns, Name: "vm", UID: "uid-1-" + run, Image: image,
		CPU: resource.MustParse("500m"), Memory: resource.MustParse("64Mi"),
	}
	var first Server

	t.Run("create with the limits asked", func(t *testing.T) {
		s, err := d.Create(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		first = s
		if !s.Running || s.State != StateRunning || s.Name != ns+"_vm" || s.Image != image ||
			s.CPU.Cmp(resource.MustParse("500m")) != 0 || s.Memory.Cmp(resource.MustParse("64Mi")) != 0 {
			t.Fatalf("Create = %+v", s)
		}
		c := inspect(ctx, t, cli, s.ID)
		hc := c.HostConfig
		if hc.NanoCPUs != 500_000_000 || hc.Memory != 64<<20 {
			t.Fatalf("NanoCpus %d, Memory %d; want 500000000, %d", hc.NanoCPUs, hc.Memory, 64<<20)
		}
		if hc.RestartPolicy.Name != container.RestartPolicyDisabled {
			t.Errorf("restart policy %q, want no", hc.RestartPolicy.Name)
		}
		t.Logf("MemorySwap %d (equal to Memory where the host accounts swap)", hc.MemorySwap)
		if hc.PidsLimit == nil || *hc.PidsLimit != DefaultPidsLimit {
			t.Errorf("PidsLimit %v, want %d", hc.PidsLimit, DefaultPidsLimit)
		}
		if !slices.Equal(hc.CapDrop, []string{"ALL"}) || !slices.Equal(hc.CapAdd, ServerCapabilities) {
			t.Errorf("CapDrop %v, CapAdd %v; want ALL dropped and only %v added", hc.CapDrop, hc.CapAdd, ServerCapabilities)
		}
		if !slices.Contains(hc.SecurityOpt, "no-new-privileges") {
			t.Errorf("SecurityOpt %v, want no-new-privileges", hc.SecurityOpt)
		}
		want := map[string]string{LabelNamespace: ns, LabelName: "vm", LabelUID: m.UID, LabelManagedBy: ManagedBy}
		for k, v := range want {
			if c.Config.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, c.Config.Labels[k], v)
			}
		}
	})
	if first.ID == "" {
		t.FailNow()
	}

	t.Run("create is idempotent", func(t *testing.T) {
		s, err := d.Create(ctx, m)
		if err != nil || s.ID != first.ID || !s.Running {
			t.Fatalf("second Create = %+v, %v; want %s running", s, err, first.ID)
		}
		if n := countContainers(ctx, t, cli, LabelUID+"="+m.UID); n != 1 {
			t.Fatalf("%d containers carry the UID, want 1", n)
		}
	})

	t.Run("usage", func(t *testing.T) {
		start := time.Now()
		u, err := d.Usage(ctx, m)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("first Usage %+v in %v", u, took)
		if took < 300*time.Millisecond {
			t.Errorf("first Usage took %v, less than the sample interval", took)
		}
		// The sleeper keeps about a fifth of a core busy (40% of 500m) and
		// holds 16Mi and more of its 64Mi.
		if u.CPU <= 0 || u.CPU > 150 || u.Memory < 20 || u.Memory > 100 {
			t.Errorf("first Usage = %+v, want CPU in (0, 150], Memory in [20, 100]", u)
		}
		// A measurement window, not a wait for state: the next call reports
		// the CPU used since this one, so some time must pass between them.
		time.Sleep(time.Second)
		start = time.Now()
		u, err = d.Usage(ctx, m)
		took = time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("second Usage %+v in %v", u, took)
		if u.CPU <= 0 || u.CPU > 150 || u.Memory < 20 || u.Memory > 100 {
			t.Errorf("second Usage = %+v", u)
		}
	})

	t.Run("stopped behind its back", func(t *testing.T) {
		zero := 0
		if _, err := cli.ContainerStop(ctx, first.ID, client.ContainerStopOptions{Timeout: &zero}); err != nil {
			t.Fatal(err)
		}
		s, ok, err := d.Get(ctx, m)
		if err != nil || !ok || s.Running || s.State != StateExited || s.ID != first.ID {
			t.Fatalf("Get after docker stop = %+v, %v, %v", s, ok, err)
		}
		if u, err := d.Usage(ctx, m); err != nil || u != (Usage{}) {
			t.Fatalf("Usage of a stopped server = %+v, %v", u, err)
		}
		s, err = d.Create(ctx, m)
		if err != nil || s.ID != first.ID || !s.Running {
			t.Fatalf("Create after docker stop = %+v, %v; want %s running again", s, err, first.ID)
		}
	})

	t.Run("removed behind its back", func(t *testing.T) {
		if _, err := cli.ContainerRemove(ctx, first.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		if s, ok, err := d.Get(ctx, m); err != nil || ok {
			t.Fatalf("Get after docker rm -f = %+v, %v, %v", s, ok, err)
		}
		if _, err := d.Usage(ctx, m); !errors.Is(err, ErrServerNotFound) {
			t.Fatalf("Usage after docker rm -f = %v, want ErrServerNotFound", err)
		}
		s, err := d.Create(ctx, m)
		if err != nil || s.ID == first.ID || !s.Running {
			t.Fatalf("Create after docker rm -f = %+v, %v; want a new running server", s, err)
		}
		first = s
	})

	t.Run("a new UID does not adopt the old container", func(t *testing.T) {
		again := m
		again.UID = "uid-2-" + run
		_, err := d.Create(ctx, again)
		var notOwned *NotOwnedError
		if !errors.As(err, &notOwned) || notOwned.OwnerUID != m.UID || notOwned.ID != first.ID || !IsPermanent(err) {
			t.Fatalf("Create with a new UID = %v, want NotOwned by %s", err, m.UID)
		}
		t.Log(err)
		if _, ok, err := d.Get(ctx, again); ok || err != nil {
			t.Fatalf("Get with the new UID = %v, %v", ok, err)
		}
		if err := d.Delete(ctx, again); err != nil {
			t.Fatal(err)
		}
		if c := inspect(ctx, t, cli, first.ID); !c.State.Running {
			t.Fatal("the old container was stopped")
		}
	})

	t.Run("delete removes", func(t *testing.T) {
		if err := d.Delete(ctx, m); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := d.Get(ctx, m); ok || err != nil {
			t.Fatalf("Get after Delete = %v, %v", ok, err)
		}
		if _, err := cli.ContainerInspect(ctx, first.ID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Fatalf("inspect after Delete = %v, want not found", err)
		}
		if err := d.Delete(ctx, m); err != nil {
			t.Fatalf("Delete of nothing = %v", err)
		}
	})

	t.Run("a foreign container with the name is refused and left untouched", func(t *testing.T) {
		fm := m
		fm.Name, fm.UID = "foreign", "uid-3-"+run
		name := ContainerName(fm.Namespace, fm.Name)
		res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:   name,
			Config: &container.Config{Image: image, Labels: map[string]string{testLabel: run}},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = cli.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
		})
		if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		before := inspect(ctx, t, cli, res.ID)

		_, err = d.Create(ctx, fm)
		var notOwned *NotOwnedError
		if !errors.As(err, &notOwned) || notOwned.ID != res.ID || notOwned.OwnerUID != "" || !IsPermanent(err) {
			t.Fatalf("Create over a foreign container = %v", err)
		}
		t.Log(err)
		if _, ok, err := d.Get(ctx, fm); ok || err != nil {
			t.Fatalf("Get = %v, %v; the foreign container must not be seen", ok, err)
		}
		if err := d.Delete(ctx, fm); err != nil {
			t.Fatal(err)
		}
		after := inspect(ctx, t, cli, res.ID)
		if !after.State.Running || after.State.StartedAt != before.State.StartedAt ||
			len(after.Config.Labels) != len(before.Config.Labels) || after.HostConfig.NanoCPUs != before.HostConfig.NanoCPUs {
			t.Fatalf("the foreign container changed: before %+v, after %+v", before.State, after.State)
		}
	})

	t.Run("missing image", func(t *testing.T) {
		mm := m
		mm.Name, mm.UID = "noimage", "uid-4-"+run
		mm.Image = "kubeharness.local/vm-driver-test-missing:" + run
		_, err := d.Create(ctx, mm)
		if !errors.Is(err, ErrImageNotFound) || !IsPermanent(err) || !strings.Contains(err.Error(), mm.Image) {
			t.Fatalf("Create = %v, want ErrImageNotFound naming %s", err, mm.Image)
		}
		t.Log(err)
		if n := countContainers(ctx, t, cli, LabelUID+"="+mm.UID); n != 0 {
			t.Fatalf("%d containers created", n)
		}
	})

	t.Run("more CPU or memory than the host has", func(t *testing.T) {
		capacity, err := d.Capacity(ctx)
		if err != nil || capacity.CPU.Sign() <= 0 || capacity.Memory.Sign() <= 0 {
			t.Fatalf("Capacity = %+v, %v", capacity, err)
		}
		t.Logf("the daemon has %s CPUs and %s memory", capacity.CPU.String(), capacity.Memory.String())
		for i, tc := range []struct{ cpu, memory string }{{"4096", "64Mi"}, {"500m", "1Ei"}, {"500m", "8Ei"}} {
			big := m
			big.Name, big.UID = fmt.Sprintf("big%d", i), fmt.Sprintf("uid-5-%d-%s", i, run)
			big.CPU, big.Memory = resource.MustParse(tc.cpu), resource.MustParse(tc.memory)
			_, err := d.Create(ctx, big)
			if !errors.Is(err, ErrInvalidMachine) || !strings.Contains(err.Error(), "is more than a server can be given here") {
				t.Fatalf("Create with %s CPU and %s memory = %v, want ErrInvalidMachine", tc.cpu, tc.memory, err)
			}
			t.Log(err)
			if strings.Contains(err.Error(), d.Host()) || strings.Contains(err.Error(), "CPUs available") {
				t.Errorf("the error %q tells the daemon's address or size", err)
			}
			if n := countContainers(ctx, t, cli, LabelUID+"="+big.UID); n != 0 {
				t.Fatalf("%d containers created", n)
			}
		}
	})

	t.Run("an image is run by its name with a tag or digest, never by an ID prefix", func(t *testing.T) {
		img, err := cli.ImageInspect(ctx, image)
		if err != nil {
			t.Fatal(err)
		}
		hexID := strings.TrimPrefix(img.ID, "sha256:")
		// The daemon itself finds the image by any prefix of its ID.
		if _, err := cli.ImageInspect(ctx, hexID[:1]); err != nil {
			t.Logf("the daemon does not resolve the ID prefix %s: %v", hexID[:1], err)
		}
		for i, ref := range []string{hexID[:1], hexID[:12], hexID[:12] + ":latest", "sha256:" + hexID} {
			im := m
			im.Name, im.UID, im.Image = fmt.Sprintf("byid%d", i), fmt.Sprintf("uid-7-%d-%s", i, run), ref
			_, err := d.Create(ctx, im)
			if !errors.Is(err, ErrInvalidMachine) && !errors.Is(err, ErrImageNotFound) {
				t.Errorf("Create with image %q = %v, want ErrInvalidMachine or ErrImageNotFound", ref, err)
			}
			if err != nil && strings.Contains(err.Error(), d.Host()) {
				t.Errorf("the error %q tells the daemon's address", err)
			}
			t.Log(err)
			if n := countContainers(ctx, t, cli, LabelUID+"="+im.UID); n != 0 {
				t.Fatalf("%d containers created for image %q", n, ref)
			}
		}
	})

	t.Run("names that joined with a hyphen collide make two containers", func(t *testing.T) {
		// Namespace <ns> with "b-c" and namespace <ns>-b with "c".
		a, b := m, m
		a.Name, a.UID = "b-c", "uid-8a-"+run
		b.Namespace, b.Name, b.UID = ns+"-b", "c", "uid-8b-"+run
		t.Cleanup(func() { removeTestContainers(t, cli, b.Namespace) })
		sa, err := d.Create(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := d.Create(ctx, b)
		if err != nil {
			t.Fatalf("Create of %s after %s = %v", b, a, err)
		}
		if sa.ID == sb.ID || sa.Name == sb.Name {
			t.Fatalf("%s and %s share %s / %s", a, b, sa.Name, sb.Name)
		}
		owned, err := d.ListOwned(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, o := range owned {
			if (o.ID == sa.ID && o.Owner.UID == a.UID && o.Owner.Namespace == a.Namespace && o.Owner.Name == a.Name) ||
				(o.ID == sb.ID && o.Owner.UID == b.UID && o.Owner.Namespace == b.Namespace && o.Owner.Name == b.Name) {
				found++
			}
		}
		if found != 2 {
			t.Fatalf("ListOwned = %+v, want both containers with their owners", owned)
		}
		for _, x := range []Machine{a, b} {
			if err := d.Delete(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("concurrent creates make one container", func(t *testing.T) {
		cm := m
		cm.Name, cm.UID = "race", "uid-6-"+run
		cm.CPU = resource.MustParse("1")
		var wg sync.WaitGroup
		ids := make([]string, 4)
		errs := make([]error, 4)
		for i := range ids {
			wg.Go(func() {
				s, err := d.Create(ctx, cm)
				ids[i], errs[i] = s.ID, err
			})
		}
		wg.Wait()
		for i := range ids {
			if errs[i] != nil || ids[i] != ids[0] {
				t.Fatalf("concurrent Create %d = %s, %v; first %s", i, ids[i], errs[i], ids[0])
			}
		}
		if n := countContainers(ctx, t, cli, LabelUID+"="+cm.UID); n != 1 {
			t.Fatalf("%d containers, want 1", n)
		}
		if c := inspect(ctx, t, cli, ids[0]); c.HostConfig.NanoCPUs != 1_000_000_000 {
			t.Fatalf("NanoCpus %d, want 1e9", c.HostConfig.NanoCPUs)
		}
		if err := d.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
	})
}

// buildTestImage builds testdata/sleeper into a one-file image named
// kubeharness.local/vm-driver-test:<run>, removed when the test ends.
func buildTestImage(ctx context.Context, t *testing.T, cli *client.Client, run string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is needed to build the test image:", err)
	}
	ver, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "sleeper")
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./testdata/sleeper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+ver.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/sleeper: %v\n%s", err, out)
	}
	content, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "sleeper", Mode: 0o755, Size: int64(len(content)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	ref := "kubeharness.local/vm-driver-test:" + run
	out, err := cli.ImageImport(ctx, client.ImageImportSource{Source: &layer, SourceName: "-"}, ref, client.ImageImportOptions{
		Changes: []string{`CMD ["/sleeper"]`, fmt.Sprintf("LABEL %s=%s", testLabel, run)},
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(out)
	_ = out.Close()
	t.Cleanup(func() {
		_, err := cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		if err != nil {
			t.Errorf("remove image %s: %v", ref, err)
		}
	})
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		t.Fatalf("image %s not imported: %v\n%s", ref, err, msg)
	}
	return ref
}

func inspect(ctx context.Context, t *testing.T, cli *client.Client, id string) container.InspectResponse {
	t.Helper()
	res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Container
}

func countContainers(ctx context.Context, t *testing.T, cli *client.Client, label string) int {
	t.Helper()
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Items)
}

// removeTestContainers removes the containers the driver made for
// namespace ns.
func removeTestContainers(t *testing.T, cli *client.Client, ns string) {
	ctx := context.Background()
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelNamespace+"="+ns)})
	if err != nil {
		t.Errorf("list test containers: %v", err)
		return
	}
	for _, c := range res.Items {
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("remove test container %s: %v", c.ID, err)
		}
	}
}
