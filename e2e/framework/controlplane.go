package framework

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

// ControlPlaneOptions configure an envtest control plane.
type ControlPlaneOptions struct {
	// Root is the repository root: binaries, CRDs and webhook manifests are
	// found below it.
	Root string
	// Version is the Kubernetes version; empty means versions.yaml's default.
	Version string
	// Stock starts etcd and kube-apiserver with controller-runtime's envtest
	// settings as they come, for comparison; otherwise they are tuned.
	Stock bool
	// CRDs installs the CRDs from config/crd/bases.
	CRDs bool
	// Webhooks installs the webhook configurations from config/webhook,
	// pointed at a local server on WebhookHost with a generated certificate.
	Webhooks bool
	// WebhookCertDir keeps the generated webhook serving certificate; empty
	// means a temporary directory.
	WebhookCertDir string
	// Out receives etcd's and kube-apiserver's output; nil discards it.
	Out io.Writer
	// StartTimeout bounds each process's start; zero means 60s.
	StartTimeout time.Duration
}

// ControlPlane is a running envtest etcd and kube-apiserver.
type ControlPlane struct {
	Env    *envtest.Environment
	Config *rest.Config
	// BinaryDir is where etcd and kube-apiserver came from.
	BinaryDir string
	// EtcdDataDir is etcd's data directory (on tmpfs when tuned).
	EtcdDataDir string
}

// etcdTmpfs is where tuned etcd keeps its data: a memory filesystem, so that
// no write waits for a disk.
const etcdTmpfs = "/dev/shm"

// StartControlPlane starts etcd and kube-apiserver and returns once the API
// server answers (and, when asked, the CRDs are served).
func StartControlPlane(o ControlPlaneOptions) (*ControlPlane, error) {
	// envtest logs through controller-runtime's logger; without one set it
	// warns on stderr. The caller's logger, if any, wins.
	if l := log.Log; l.GetSink() == nil {
		log.SetLogger(logr.Discard())
	}
	if o.Version == "" {
		lock, err := binaries.LoadLockfile(o.Root)
		if err != nil {
			return nil, err
		}
		o.Version = lock.Default
	}
	dir, err := binaries.Resolve(o.Root, o.Version)
	if err != nil {
		return nil, err
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		ControlPlaneStartTimeout: o.StartTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
		ErrorIfCRDPathMissing:    true,
	}
	cp := &ControlPlane{Env: env, BinaryDir: dir}
	if o.CRDs {
		env.CRDDirectoryPaths = []string{filepath.Join(o.Root, "config", "crd", "bases")}
	}
	if o.Webhooks {
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths:               []string{filepath.Join(o.Root, "config", "webhook")},
			LocalServingHost:    "127.0.0.1",
			LocalServingCertDir: o.WebhookCertDir,
		}
	}
	env.ControlPlane.Etcd = &envtest.Etcd{}
	etcd := env.ControlPlane.Etcd
	etcd.Out, etcd.Err = out, out
	api := env.ControlPlane.GetAPIServer()
	api.Out, api.Err = out, out
	if !o.Stock {
		if cp.EtcdDataDir, err = os.MkdirTemp(etcdTmpfsDir(), "kubeharness-etcd-"); err != nil {
			return nil, fmt.Errorf("creating etcd data directory: %w", err)
		}
		etcd.DataDir = cp.EtcdDataDir
		tuneEtcd(etcd.Configure())
		tuneAPIServer(api.Configure())
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		cp.removeData()
		return nil, fmt.Errorf("starting envtest control plane (binaries from %s): %w", dir, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cp.Config = cfg
	return cp, nil
}

// Stop stops kube-apiserver and etcd and removes etcd's data.
func (c *ControlPlane) Stop() error {
	err := c.Env.Stop()
	c.removeData()
	return err
}

func (c *ControlPlane) removeData() {
	if c.EtcdDataDir != "" {
		_ = os.RemoveAll(c.EtcdDataDir)
	}
}

func etcdTmpfsDir() string {
	if fi, err := os.Stat(etcdTmpfs); err == nil && fi.IsDir() {
		return etcdTmpfs
	}
	return os.TempDir()
}
