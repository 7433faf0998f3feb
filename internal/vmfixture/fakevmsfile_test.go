package vmfixture

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// connectTimeout bounds the wait for the endpoint's file in these tests.
const connectTimeout = 5 * time.Second

func TestFakeVMsFileSteersTheServingProcesssDriver(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "fake-vms.json")
	fake := driver.NewFake()
	stop, err := ServeFakeVMsFile(fake, file)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("the endpoint's file has mode %v, want 0600: it holds the token", perm)
	}
	remote, err := ConnectFakeVMsFile(context.Background(), file, connectTimeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := remote.AddForeign("ns", "vm", "uid")
	if err != nil {
		t.Fatal(err)
	}
	servers := fake.List()
	if len(servers) != 1 || servers[0].Server.ID != id {
		t.Errorf("after AddForeign through the file's endpoint, the driver holds %+v, want one server %s", servers, id)
	}
	stop()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("stop left the endpoint's file: %v", err)
	}
}

func TestFakeVMsFileRefusesADirectoryOthersWrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := ServeFakeVMsFile(driver.NewFake(), filepath.Join(dir, "fake-vms.json")); err == nil {
		t.Fatal("served into a directory anyone may write to")
	}
}

func TestConnectFakeVMsFileEndsWhenTheProcessStops(t *testing.T) {
	done := make(chan error, 1)
	done <- os.ErrProcessDone
	_, err := ConnectFakeVMsFile(context.Background(), filepath.Join(t.TempDir(), "never"), connectTimeout, done)
	if err == nil {
		t.Fatal("kept waiting for a process that had stopped")
	}
}
