package vmfixture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// FakeVMsFileEnv names, in the environment of a vm-controller binary run
// with the fake driver by a harness, the file where the binary tells that
// harness how to steer its driver (ServeFakeVMsFile): the harness then
// steers a controller in another process as it steers one in its own
// (ConnectFakeVMsFile). It is for test runs only: unset, the binary serves
// nothing.
const FakeVMsFileEnv = "KUBEHARNESS_FAKE_VMS_FILE"

// fakeVMsEndpoint is what the file of FakeVMsFileEnv holds.
type fakeVMsEndpoint struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// ServeFakeVMsFile serves fake on a loopback port (ServeFakeVMs) and writes
// where, with the token callers must send, to file, readable by this user
// only: the file's directory must be one only this user can write to, as
// the harness makes it. stop closes the endpoint and removes the file.
func ServeFakeVMsFile(fake *driver.Fake, file string) (stop func(), err error) {
	dir := filepath.Dir(file)
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FakeVMsFileEnv, err)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%s: %s may be written by others (mode %v): the token would not be this user's alone", FakeVMsFileEnv, dir, fi.Mode().Perm())
	}
	url, token, stopServing, err := ServeFakeVMs(LocalFakeVMs(fake))
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(fakeVMsEndpoint{URL: url, Token: token})
	if err == nil {
		err = writePrivate(file, data)
	}
	if err != nil {
		stopServing()
		return nil, fmt.Errorf("%s: %w", FakeVMsFileEnv, err)
	}
	return func() {
		stopServing()
		_ = os.Remove(file)
	}, nil
}

// writePrivate writes data to name whole, mode 0600, through a file of its
// own in the same directory: a reader never sees it half written.
func writePrivate(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// ConnectFakeVMsFile waits up to timeout for the binary given file in
// FakeVMsFileEnv to write it, and steers that binary's fake driver
// (RemoteFakeVMs). done, when it yields, is the binary having stopped:
// the wait ends there, with its error.
func ConnectFakeVMsFile(ctx context.Context, file string, timeout time.Duration, done <-chan error) (FakeVMs, error) {
	var ep fakeVMsEndpoint
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("the VirtualMachine controller stopped before it served its fake driver: %w", err)
		default:
		}
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if err := json.Unmarshal(data, &ep); err != nil {
			return false, fmt.Errorf("%s: %w", file, err)
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the fake driver of the VirtualMachine controller's process (%s): %w", file, err)
	}
	return RemoteFakeVMs(ep.URL, ep.Token), nil
}
